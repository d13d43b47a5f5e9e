package dev.tegula.hadoop;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.examples.terasort.TeraGen;
import org.apache.hadoop.examples.terasort.TeraSort;
import org.apache.hadoop.examples.terasort.TeraValidate;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.namenode.FSNamesystem;
import org.apache.hadoop.util.ToolRunner;

/**
 * The Java side of {@code tegula bench hadoop}: Hadoop's TeraGen, TeraSort and TeraValidate
 * with the local job runner, either on a local directory ({@code local}) or against a
 * MiniDFSCluster whose DataNodes keep their blocks in given directories ({@code hdfs}).
 *
 * <pre>
 * TeraBench local --dir DIR --rows N [--maps 4] [--reduces 2] [--repeat 1] [--json FILE] [--sync]
 * TeraBench hdfs --data-dirs D1,D2,D3,D4 --work DIR --rows N [--replication 3]
 *                [--block-size 16777216] [--maps 4] [--reduces 2] [--json FILE] [--sync]
 * </pre>
 *
 * <p>With {@code --sync} the driver prints {@code @start PHASE} and {@code @end PHASE} lines on
 * standard output and waits for one line on standard input after each, so that the caller can
 * sample the drives' counters between phases and act during a phase. An answer of
 * {@code datanode-gone K} (after any line) tells the driver that DataNode K's drive was taken
 * away: it stops that DataNode, waits until the NameNode declares it dead and every block has
 * its replicas again, and reports how long that took. Every other answer just continues.
 *
 * <p>Results: one JSON object per phase ({@code phase}, {@code wall_s}, {@code valid} for
 * TeraValidate, the JVM's {@code /proc/self/io} deltas) in a JSON document written to
 * {@code --json} and printed as the last line of standard output after {@code @result}.
 */
public final class TeraBench {
  private final Map<String, String> opts = new LinkedHashMap<>();
  private final List<String> phaseJson = new ArrayList<>();
  private final List<String> extraJson = new ArrayList<>();
  private final BufferedReader stdin =
      new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
  private final PrintStream out;
  private MiniDFSCluster cluster;
  private boolean allValid = true;

  private TeraBench(PrintStream out) {
    this.out = out;
  }

  public static void main(String[] args) throws Exception {
    // Hadoop's jobs log to stdout through log4j; the protocol lines need a stream of their own.
    PrintStream protocol = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
    System.setOut(System.err);
    TeraBench b = new TeraBench(protocol);
    int rc = b.run(args);
    protocol.flush();
    // MiniDFSCluster and the local runner leave non-daemon threads behind.
    System.exit(rc);
  }

  private int run(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: TeraBench local|hdfs [options] (see the class comment)");
      return 2;
    }
    String mode = args[0];
    for (int i = 1; i < args.length; i++) {
      String a = args[i];
      if (!a.startsWith("--")) {
        throw new IllegalArgumentException("unexpected argument " + a);
      }
      String key = a.substring(2);
      if (key.equals("sync")) {
        opts.put(key, "true");
      } else {
        if (i + 1 >= args.length) {
          throw new IllegalArgumentException(a + " needs a value");
        }
        opts.put(key, args[++i]);
      }
    }
    long rows = Long.parseLong(req("rows"));
    long t0 = System.nanoTime();
    String fsInfo;
    Configuration conf;
    Path base;
    if (mode.equals("local")) {
      File dir = new File(req("dir")).getAbsoluteFile();
      conf = jobConf(new Configuration(), new File(dir, "tmp"));
      conf.set("fs.defaultFS", "file:///");
      base = new Path(new File(dir, "tera").toURI());
      fsInfo = "\"mode\":\"local\",\"dir\":" + q(dir.getPath());
    } else if (mode.equals("hdfs")) {
      File work = new File(req("work")).getAbsoluteFile();
      conf = startCluster(work);
      conf = jobConf(conf, new File(work, "mr-local"));
      base = new Path("/tera");
      fsInfo = "\"mode\":\"hdfs\",\"datanodes\":" + cluster.getDataNodes().size()
          + ",\"replication\":" + conf.get("dfs.replication")
          + ",\"block_size\":" + conf.get("dfs.blocksize")
          + ",\"namenode\":" + q(FileSystem.getDefaultUri(conf).toString());
    } else {
      throw new IllegalArgumentException("mode must be local or hdfs, not " + mode);
    }
    final Configuration jc = conf;
    FileSystem fs = FileSystem.get(conf);
    fs.delete(base, true);
    Path gen = new Path(base, "in");
    Path sorted = new Path(base, "out");
    Path report = new Path(base, "validate");
    String maps = opt("maps", "4");
    String reduces = opt("reduces", "2");

    phase("teragen", conf, fs, () -> ToolRunner.run(new Configuration(jc), new TeraGen(),
        new String[] {"-D", "mapreduce.job.maps=" + maps, Long.toString(rows), gen.toString()}));
    int repeat = Integer.parseInt(opt("repeat", "1"));
    for (int r = 1; r <= repeat; r++) {
      // Each run replaces the previous run's output (deleted inside the phase).
      phase("terasort", conf, fs, () -> {
        fs.delete(sorted, true);
        return ToolRunner.run(new Configuration(jc), new TeraSort(),
            new String[] {"-D", "mapreduce.job.reduces=" + reduces,
                // TeraSort writes its output with replication 1 unless told otherwise.
                "-D", "mapreduce.terasort.output.replication=" + jc.get("dfs.replication", "1"),
                gen.toString(), sorted.toString()});
      });
    }
    phase("teravalidate", conf, fs, () -> ToolRunner.run(new Configuration(jc), new TeraValidate(),
        new String[] {sorted.toString(), report.toString()}));

    if (cluster != null) {
      extraJson.add("\"datanodes_live_end\":" + liveDataNodes());
      extraJson.add("\"under_replicated_end\":" + cluster.getNamesystem().getUnderReplicatedBlocks());
      extraJson.add("\"missing_blocks_end\":" + cluster.getNamesystem().getMissingBlocksCount());
    }
    if (!opts.containsKey("keep")) {
      fs.delete(base, true);
    }
    double total = (System.nanoTime() - t0) / 1e9;
    StringBuilder doc = new StringBuilder("{").append(fsInfo)
        .append(",\"rows\":").append(rows)
        .append(",\"maps\":").append(maps).append(",\"reduces\":").append(reduces)
        .append(",\"hadoop_version\":").append(q(org.apache.hadoop.util.VersionInfo.getVersion()))
        .append(",\"total_s\":").append(fmt(total))
        .append(",\"valid\":").append(allValid);
    for (String e : extraJson) {
      doc.append(',').append(e);
    }
    doc.append(",\"phases\":[").append(String.join(",", phaseJson)).append("]}");
    if (opts.containsKey("json")) {
      Files.write(Paths.get(opts.get("json")), (doc + "\n").getBytes(StandardCharsets.UTF_8));
    }
    if (cluster != null) {
      cluster.shutdown();
    }
    out.println("@result " + doc);
    return allValid ? 0 : 1;
  }

  /** The local job runner, with its temporary and intermediate files under {@code tmp}. */
  private Configuration jobConf(Configuration conf, File tmp) {
    conf.set("mapreduce.framework.name", "local");
    conf.set("hadoop.tmp.dir", tmp.getPath());
    conf.set("mapreduce.cluster.local.dir", new File(tmp, "local").getPath());
    conf.set("mapreduce.jobtracker.staging.root.dir", new File(tmp, "staging").toURI().toString());
    conf.set("mapreduce.cluster.temp.dir", new File(tmp, "temp").getPath());
    conf.setInt("mapreduce.local.map.tasks.maximum", Integer.parseInt(opt("parallel", "2")));
    conf.setInt("mapreduce.local.reduce.tasks.maximum", Integer.parseInt(opt("parallel", "2")));
    // The job client polls for completion every 5 s by default: most of a small job's time.
    conf.setInt("mapreduce.client.completion.pollinterval", 50);
    conf.setInt("mapreduce.client.progressmonitor.pollinterval", 100);
    conf.setInt("mapreduce.task.io.sort.mb", Integer.parseInt(opt("sort-mb", "64")));
    return conf;
  }

  /**
   * A NameNode (metadata under {@code work/name}) and one DataNode per directory in
   * {@code --data-dirs}, each with exactly that directory as {@code dfs.datanode.data.dir}.
   * Heartbeats and redundancy checks are fast so that a lost DataNode is noticed in seconds.
   */
  private Configuration startCluster(File work) throws IOException {
    String[] dirs = req("data-dirs").split(",");
    Configuration conf = new Configuration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(work, "minidfs").getPath());
    conf.set("dfs.replication", opt("replication", "3"));
    conf.setLong("dfs.blocksize", Long.parseLong(opt("block-size", Long.toString(16L << 20))));
    conf.setInt("dfs.heartbeat.interval", 1);
    conf.setInt("dfs.namenode.heartbeat.recheck-interval", 2000);
    conf.setInt("dfs.namenode.redundancy.interval.seconds", 1);
    conf.setInt("dfs.namenode.replication.max-streams", 16);
    conf.setInt("dfs.namenode.replication.work.multiplier.per.iteration", 16);
    // A re-replication whose transfer fails (e.g. its target was the DataNode whose drive was
    // just lost, still "live" when the work was scheduled) is retried only after this timeout;
    // Hadoop's default of 300 s equals the failover wait, so one failed transfer failed the run.
    conf.setInt("dfs.namenode.reconstruction.pending.timeout-sec", 5);
    conf.setInt("dfs.datanode.failed.volumes.tolerated", 0);
    conf.setBoolean("dfs.permissions.enabled", false);
    conf.setLong("dfs.datanode.du.reserved", 0);
    conf.setLong("dfs.namenode.resource.du.reserved", 1L << 20);
    // The DataNodes' drives hold data only; the NameNode's metadata stays on the work dir.
    cluster = new MiniDFSCluster.Builder(conf).numDataNodes(0).format(true).build();
    for (String d : dirs) {
      Configuration dn = new Configuration(conf);
      File dir = new File(d).getAbsoluteFile();
      dir.mkdirs();
      dn.set("dfs.datanode.data.dir", dir.toURI().toString());
      cluster.startDataNodes(dn, 1, false, null, null);
    }
    // MiniDFSCluster sets dfs.replication to min(replication, DataNodes at build), 0 here; set
    // it back before any FileSystem is created (they are cached with their configuration).
    cluster.getConfiguration(0).set("dfs.replication", opt("replication", "3"));
    cluster.waitActive();
    Configuration c = new Configuration(cluster.getConfiguration(0));
    c.set("fs.defaultFS", "hdfs://127.0.0.1:" + cluster.getNameNodePort());
    return c;
  }

  private int liveDataNodes() {
    return cluster.getNamesystem().getNumLiveDataNodes();
  }

  private interface Job {
    int run() throws Exception;
  }

  private void phase(String name, Configuration conf, FileSystem fs, Job job) throws Exception {
    handshake("@start " + name);
    Map<String, Long> io0 = procIo();
    long t0 = System.nanoTime();
    int rc = job.run();
    double wall = (System.nanoTime() - t0) / 1e9;
    Map<String, Long> io1 = procIo();
    int run = (int) phaseJson.stream().filter(p -> p.startsWith("{\"phase\":" + q(name))).count() + 1;
    StringBuilder j = new StringBuilder("{\"phase\":").append(q(name))
        .append(",\"run\":").append(run)
        .append(",\"wall_s\":").append(fmt(wall))
        .append(",\"exit\":").append(rc);
    for (Map.Entry<String, Long> e : io1.entrySet()) {
      Long before = io0.get(e.getKey());
      if (before != null) {
        j.append(",\"proc_").append(e.getKey()).append("\":").append(e.getValue() - before);
      }
    }
    boolean ok = rc == 0;
    if (name.equals("teravalidate")) {
      String verdict = validateReport(fs);
      ok = ok && verdict.startsWith("checksum");
      j.append(",\"report\":").append(q(verdict.trim()));
    }
    if (name.equals("teragen") || name.equals("terasort")) {
      j.append(",\"output_bytes\":").append(outputBytes(fs, name.equals("teragen") ? "in" : "out"));
    }
    j.append(",\"valid\":").append(ok);
    allValid &= ok;
    // TeraSort's partition sampler leaves input streams for the garbage collector to close;
    // an open file keeps a mount from being unmounted between phases.
    System.gc();
    Thread.sleep(200);
    System.gc();
    String gone = handshake("@end " + name);
    if (gone != null && cluster != null) {
      j.append(',').append(failover(Integer.parseInt(gone)));
    }
    j.append('}');
    phaseJson.add(j.toString());
    System.err.println("phase " + name + ": " + j);
  }

  private long outputBytes(FileSystem fs, String sub) throws IOException {
    long n = 0;
    for (FileStatus s : fs.listStatus(new Path(teraBase(fs), sub))) {
      n += s.getLen();
    }
    return n;
  }

  private Path teraBase(FileSystem fs) {
    if (cluster != null) {
      return new Path("/tera");
    }
    return new Path(new File(new File(opts.get("dir")).getAbsoluteFile(), "tera").toURI());
  }

  /** TeraValidate's report: a "checksum" line, and "error" lines when the output is wrong. */
  private String validateReport(FileSystem fs) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (FileStatus s : fs.listStatus(new Path(teraBase(fs), "validate"))) {
      if (!s.getPath().getName().startsWith("part-")) {
        continue;
      }
      try (BufferedReader r = new BufferedReader(new InputStreamReader(fs.open(s.getPath()), StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          if (line.startsWith("error")) {
            sb.insert(0, line + "\n");
          } else {
            sb.append(line).append('\n');
          }
        }
      }
    }
    return sb.length() == 0 ? "no report" : sb.toString();
  }

  /**
   * DataNode {@code k}'s drive is gone: stop the DataNode (as its process would die or be taken
   * out of service), then wait until the NameNode has declared it dead and re-replicated every
   * block it held.
   */
  private String failover(int k) throws Exception {
    long t0 = System.nanoTime();
    int liveBefore = liveDataNodes();
    String lostAddr = cluster.getDataNodes().get(k).getXferAddress().getPort() + "";
    FileSystem fs0 = FileSystem.get(new Configuration(cluster.getConfiguration(0)));
    long[] before = replicaCounts(fs0, lostAddr);
    cluster.stopDataNode(k);
    FSNamesystem ns = cluster.getNamesystem();
    long deadline = System.nanoTime() + 300_000_000_000L;
    long maxUnder = 0;
    double deadAt = -1;
    FileSystem fs = FileSystem.get(new Configuration(cluster.getConfiguration(0)));
    long short0 = -1;
    long shortNow = -1;
    while (System.nanoTime() < deadline) {
      cluster.triggerHeartbeats();
      int live = ns.getNumLiveDataNodes();
      maxUnder = Math.max(maxUnder, ns.getUnderReplicatedBlocks());
      if (live < liveBefore && deadAt < 0) {
        deadAt = (System.nanoTime() - t0) / 1e9;
      }
      if (deadAt >= 0) {
        shortNow = shortBlocks(fs, live);
        if (short0 < 0) {
          short0 = shortNow;
        }
        // Done when the NameNode no longer lists the lost DataNode for any block and every
        // block has its replicas on the live ones.
        if (shortNow == 0 && ns.getMissingBlocksCount() == 0
            && replicaCounts(fs, lostAddr)[2] == 0) {
          break;
        }
      }
      Thread.sleep(100);
    }
    double done = (System.nanoTime() - t0) / 1e9;
    boolean ok = deadAt >= 0 && shortNow == 0 && ns.getMissingBlocksCount() == 0;
    allValid &= ok;
    long[] after = replicaCounts(fs, lostAddr);
    ok &= after[2] == 0;
    return "\"failover\":{\"datanode\":" + k + ",\"live_before\":" + liveBefore
        + ",\"tera_blocks\":" + before[0]
        + ",\"tera_replicas_before\":" + before[1]
        + ",\"tera_replicas_on_lost_before\":" + before[2]
        + ",\"tera_replicas_after\":" + after[1]
        + ",\"tera_replicas_on_lost_after\":" + after[2]
        + ",\"live_after\":" + ns.getNumLiveDataNodes()
        + ",\"declared_dead_s\":" + fmt(deadAt)
        + ",\"max_under_replicated\":" + maxUnder
        + ",\"tera_blocks_short_when_dead\":" + short0
        + ",\"tera_blocks_short\":" + shortNow
        + ",\"rereplicated_s\":" + fmt(done)
        + ",\"under_replicated\":" + ns.getUnderReplicatedBlocks()
        + ",\"missing_blocks\":" + ns.getMissingBlocksCount()
        + ",\"ok\":" + ok + "}";
  }

  /** Blocks under /tera, their replicas, and replicas on the DataNode with this port. */
  private static long[] replicaCounts(FileSystem fs, String port) throws IOException {
    long[] n = new long[3];
    org.apache.hadoop.fs.RemoteIterator<org.apache.hadoop.fs.LocatedFileStatus> it =
        fs.listFiles(new Path("/tera"), true);
    while (it.hasNext()) {
      for (org.apache.hadoop.fs.BlockLocation b : it.next().getBlockLocations()) {
        n[0]++;
        for (String name : b.getNames()) {
          n[1]++;
          if (name.endsWith(":" + port)) {
            n[2]++;
          }
        }
      }
    }
    return n;
  }

  /**
   * Blocks of the files under /tera with fewer replicas than min(their replication, live
   * DataNodes). (The NameNode's own under-replicated count also holds TeraSort's partition
   * file, written with replication 10, which four DataNodes can never satisfy.)
   */
  private static long shortBlocks(FileSystem fs, int live) throws IOException {
    long n = 0;
    org.apache.hadoop.fs.RemoteIterator<org.apache.hadoop.fs.LocatedFileStatus> it =
        fs.listFiles(new Path("/tera"), true);
    while (it.hasNext()) {
      org.apache.hadoop.fs.LocatedFileStatus f = it.next();
      int want = Math.min(f.getReplication(), live);
      for (org.apache.hadoop.fs.BlockLocation b : f.getBlockLocations()) {
        if (b.getHosts().length < want) {
          n++;
        }
      }
    }
    return n;
  }

  /**
   * With --sync: prints the line and waits for the caller's answer. Returns K when the answer
   * was {@code datanode-gone K}, else null.
   */
  private String handshake(String line) throws IOException {
    if (!opts.containsKey("sync")) {
      return null;
    }
    out.println(line);
    out.flush();
    String answer = stdin.readLine();
    if (answer != null && answer.startsWith("datanode-gone ")) {
      return answer.substring("datanode-gone ".length()).trim();
    }
    return null;
  }

  /** rchar, wchar, read_bytes, write_bytes, ... of this JVM (the local job runner's tasks run in it). */
  private static Map<String, Long> procIo() {
    Map<String, Long> m = new LinkedHashMap<>();
    try {
      for (String l : Files.readAllLines(Paths.get("/proc/self/io"))) {
        String[] kv = l.split(":\\s*");
        if (kv.length == 2) {
          m.put(kv[0].trim(), Long.parseLong(kv[1].trim()));
        }
      }
    } catch (IOException | NumberFormatException e) {
      // Not Linux: no I/O counters.
    }
    return m;
  }

  private String req(String k) {
    String v = opts.get(k);
    if (v == null) {
      throw new IllegalArgumentException("--" + k + " is required");
    }
    return v;
  }

  private String opt(String k, String def) {
    return opts.getOrDefault(k, def);
  }

  private static String fmt(double v) {
    return String.format(Locale.ROOT, "%.3f", v);
  }

  private static String q(String s) {
    StringBuilder sb = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"': sb.append("\\\""); break;
        case '\\': sb.append("\\\\"); break;
        case '\n': sb.append("\\n"); break;
        case '\t': sb.append("\\t"); break;
        default:
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
      }
    }
    return sb.append('"').toString();
  }
}
