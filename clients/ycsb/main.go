// Command ycsb is go-ycsb (github.com/pingcap/go-ycsb) with only its `basic` and `redis`
// bindings registered, so that it builds without the other databases' client libraries
// (go-ycsb's own cmd/go-ycsb imports every binding and cannot be `go install`ed here).
//
// Usage is go-ycsb's:
//
//	ycsb load redis -P workloads/workloada -p redis.addr=127.0.0.1:6390 -p redis.datatype=hash
//	ycsb run  redis -P workloads/workloada -p redis.addr=127.0.0.1:6390 -p redis.datatype=hash
//
// The load/run commands and their flags follow go-ycsb v1.0.1's cmd/go-ycsb (main.go and
// client.go, Apache License 2.0, Copyright 2018 PingCAP, Inc.), trimmed to what a benchmark
// run needs (no interactive shell, no pprof listener).
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/magiconair/properties"
	"github.com/spf13/cobra"

	"github.com/pingcap/go-ycsb/pkg/client"
	"github.com/pingcap/go-ycsb/pkg/measurement"
	"github.com/pingcap/go-ycsb/pkg/prop"
	"github.com/pingcap/go-ycsb/pkg/util"
	_ "github.com/pingcap/go-ycsb/pkg/workload" // registers the core workload
	"github.com/pingcap/go-ycsb/pkg/ycsb"

	_ "github.com/pingcap/go-ycsb/db/basic" // registers `basic`
	_ "github.com/pingcap/go-ycsb/db/redis" // registers `redis`

	_ "github.com/tegula/tegula/clients/ycsb/redisindexed" // registers `redis-indexed`
)

var (
	propertyFiles  []string
	propertyValues []string
	tableName      string
	threadsArg     int
	targetArg      int
	reportInterval int

	globalDB       ycsb.DB
	globalWorkload ycsb.Workload
	globalProps    *properties.Properties
)

func initGlobal(dbName string, onProperties func()) {
	globalProps = properties.NewProperties()
	if len(propertyFiles) > 0 {
		globalProps = properties.MustLoadFiles(propertyFiles, properties.UTF8, false)
	}
	for _, p := range propertyValues {
		kv := strings.SplitN(p, "=", 2)
		if len(kv) != 2 {
			log.Fatalf("bad property: `%s`, expected format `name=value`", p)
		}
		globalProps.Set(kv[0], kv[1])
	}
	if onProperties != nil {
		onProperties()
	}
	measurement.InitMeasure(globalProps)
	if len(tableName) == 0 {
		tableName = globalProps.GetString(prop.TableName, prop.TableNameDefault)
	}
	workloadName := globalProps.GetString(prop.Workload, "core")
	creator := ycsb.GetWorkloadCreator(workloadName)
	var err error
	if globalWorkload, err = creator.Create(globalProps); err != nil {
		util.Fatalf("create workload %s failed %v", workloadName, err)
	}
	dbCreator := ycsb.GetDBCreator(dbName)
	if dbCreator == nil {
		util.Fatalf("%s is not registered (this build has: basic, redis, redis-indexed)", dbName)
	}
	if globalDB, err = dbCreator.Create(globalProps); err != nil {
		util.Fatalf("create db %s failed %v", dbName, err)
	}
	globalDB = client.DbWrapper{DB: globalDB}
}

func runClient(ctx context.Context, cmd *cobra.Command, args []string, doTransactions bool, command string) {
	initGlobal(args[0], func() {
		globalProps.Set(prop.DoTransactions, strconv.FormatBool(doTransactions))
		globalProps.Set(prop.Command, command)
		if cmd.Flags().Changed("threads") {
			globalProps.Set(prop.ThreadCount, strconv.Itoa(threadsArg))
		}
		if cmd.Flags().Changed("target") {
			globalProps.Set(prop.Target, strconv.Itoa(targetArg))
		}
		if cmd.Flags().Changed("interval") {
			globalProps.Set(prop.LogInterval, strconv.Itoa(reportInterval))
		}
	})
	c := client.NewClient(globalProps, globalWorkload, globalDB)
	start := time.Now()
	c.Run(ctx)
	fmt.Println("**********************************************")
	fmt.Printf("Run finished, takes %s\n", time.Since(start))
	measurement.Output()
}

func clientCommand(ctx context.Context, use, short string, doTransactions bool, command string) *cobra.Command {
	m := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.MinimumNArgs(1),
		Run: func(cmd *cobra.Command, args []string) {
			runClient(ctx, cmd, args, doTransactions, command)
		},
	}
	m.Flags().StringSliceVarP(&propertyFiles, "property_file", "P", nil, "Specify a property file")
	m.Flags().StringArrayVarP(&propertyValues, "prop", "p", nil, "Specify a property value with name=value")
	m.Flags().StringVar(&tableName, "table", "", "Use the table name instead of the default \""+prop.TableNameDefault+"\"")
	m.Flags().IntVar(&threadsArg, "threads", 1, "Execute using n threads - can also be specified as the \"threadcount\" property")
	m.Flags().IntVar(&targetArg, "target", 0, "Attempt to do n operations per second (default: unlimited) - can also be specified as the \"target\" property")
	m.Flags().IntVar(&reportInterval, "interval", 10, "Interval of outputting measurements in seconds")
	return m
}

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sc := make(chan os.Signal, 1)
	signal.Notify(sc, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	go func() {
		<-sc
		cancel()
		<-sc
		os.Exit(1)
	}()

	root := &cobra.Command{Use: "ycsb", Short: "go-ycsb with the basic, redis and redis-indexed bindings"}
	root.AddCommand(
		clientCommand(ctx, "load db", "YCSB load benchmark", false, "load"),
		clientCommand(ctx, "run db", "YCSB run benchmark", true, "run"),
	)
	err := root.Execute()
	cancel()
	if globalDB != nil {
		globalDB.Close()
	}
	if globalWorkload != nil {
		globalWorkload.Close()
	}
	if err != nil {
		os.Exit(1)
	}
}
