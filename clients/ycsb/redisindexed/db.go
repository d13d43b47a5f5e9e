// Package redisindexed registers the go-ycsb binding `redis-indexed`: go-ycsb's `redis`
// binding with the scan index of Java YCSB's redis binding (site.ycsb.db.RedisClient), so
// that workload E measures scans. go-ycsb v1.0.1's `redis` binding answers every Scan with
// "scan is not supported".
//
// As Java YCSB does, every insert also adds the record's key to the sorted set `_indices`
// with the key's Java String.hashCode() as its score, a delete removes it, and a scan is
//
//	ZRANGEBYSCORE _indices hash(startkey) +inf LIMIT 0 count
//
// followed by one read of each key returned. (The order is the hash's, not the keys'; it is
// the same for every server, so a comparison stays fair.) Reads, updates and inserts go
// through go-ycsb's binding unchanged, with all of its properties (redis.addr, redis.datatype,
// redis.password, ...).
package redisindexed

import (
	"context"
	"strconv"

	goredis "github.com/go-redis/redis/v9"
	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/ycsb"

	_ "github.com/pingcap/go-ycsb/db/redis" // the wrapped binding
)

// IndexKey is the sorted set holding every key, as in Java YCSB.
const IndexKey = "_indices"

// JavaHashCode is Java's String.hashCode() of s (UTF-16 code units, 32-bit wrap-around).
func JavaHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

type indexed struct {
	ycsb.DB
	index *goredis.Client
}

func score(key string) string {
	return strconv.FormatInt(int64(JavaHashCode(key)), 10)
}

func (d *indexed) Insert(ctx context.Context, table string, key string, values map[string][]byte) error {
	if err := d.DB.Insert(ctx, table, key, values); err != nil {
		return err
	}
	return d.index.Do(ctx, "ZADD", IndexKey, score(key), key).Err()
}

func (d *indexed) Delete(ctx context.Context, table string, key string) error {
	if err := d.DB.Delete(ctx, table, key); err != nil {
		return err
	}
	return d.index.Do(ctx, "ZREM", IndexKey, key).Err()
}

func (d *indexed) Scan(ctx context.Context, table string, startKey string, count int, fields []string) ([]map[string][]byte, error) {
	keys, err := d.index.Do(ctx, "ZRANGEBYSCORE", IndexKey, score(startKey), "+inf",
		"LIMIT", 0, count).StringSlice()
	if err != nil {
		return nil, err
	}
	out := make([]map[string][]byte, 0, len(keys))
	for _, k := range keys {
		v, err := d.DB.Read(ctx, table, k, fields)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (d *indexed) Close() error {
	err := d.DB.Close()
	if e := d.index.Close(); err == nil {
		err = e
	}
	return err
}

type creator struct{}

func (creator) Create(p *properties.Properties) (ycsb.DB, error) {
	inner, err := ycsb.GetDBCreator("redis").Create(p)
	if err != nil {
		return nil, err
	}
	threads := p.GetInt("threadcount", 1)
	password, _ := p.Get("redis.password")
	index := goredis.NewClient(&goredis.Options{
		Addr:         p.GetString("redis.addr", "localhost:6379"),
		Network:      p.GetString("redis.network", "tcp"),
		Password:     password,
		DB:           p.GetInt("redis.db", 0),
		PoolSize:     p.GetInt("redis.pool_size", threads),
		MinIdleConns: p.GetInt("redis.pool_size", threads),
	})
	if err := index.Ping(context.Background()).Err(); err != nil {
		inner.Close()
		return nil, err
	}
	return &indexed{DB: inner, index: index}, nil
}

func init() {
	ycsb.RegisterDBCreator("redis-indexed", creator{})
}
