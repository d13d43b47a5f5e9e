//! The Java driver (`clients/hadoop/`): where it is, its class path, and its line protocol.

use super::*;

pub(super) fn hadoop_dir(a: &JavaArgs) -> Result<PathBuf> {
    if let Some(d) = &a.hadoop_dir {
        return Ok(d.clone());
    }
    if let Ok(d) = std::env::var("TEGULA_HADOOP_DIR") {
        return Ok(PathBuf::from(d));
    }
    let mut starts = vec![std::env::current_dir()?];
    if let Ok(exe) = std::env::current_exe() {
        starts.push(exe);
    }
    for s in starts {
        for dir in s.ancestors() {
            if dir.join("clients/hadoop/pom.xml").is_file() {
                return Ok(dir.join("clients/hadoop"));
            }
        }
    }
    bail!("no clients/hadoop/pom.xml here or above, nor next to the binary: give --hadoop-dir or set TEGULA_HADOOP_DIR")
}

/// The driver's class path, building the Maven project if its jar is missing.
pub(super) fn classpath(a: &JavaArgs) -> Result<String> {
    let dir = hadoop_dir(a)?;
    let jar = dir.join("target/tegula-hadoop.jar");
    let cp = dir.join("target/classpath.txt");
    if !jar.is_file() || !cp.is_file() {
        eprintln!(
            "building the Hadoop driver: mvn -B -q package in {}",
            dir.display()
        );
        let st = Command::new("mvn")
            .args(["-B", "-q", "package"])
            .current_dir(&dir)
            .status()
            .context("running mvn (is Maven installed?)")?;
        if !st.success() {
            bail!("mvn package failed in {}", dir.display());
        }
    }
    let deps = std::fs::read_to_string(&cp).with_context(|| format!("reading {}", cp.display()))?;
    Ok(format!("{}:{}", jar.display(), deps.trim()))
}

/// A running driver and its protocol.
pub(super) struct Driver {
    pub(super) child: Child,
    pub(super) stdin: ChildStdin,
    pub(super) lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

pub(super) enum Event {
    Start(String),
    End(String),
    Result(Value),
}

impl Driver {
    pub(super) fn start(
        a: &JavaArgs,
        driver_args: &[String],
        log: &Path,
        tmp: &Path,
    ) -> Result<Driver> {
        let cp = classpath(a)?;
        std::fs::create_dir_all(tmp)?;
        let logf =
            std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let mut cmd = Command::new(&a.java);
        cmd.arg(format!("-Xmx{}", a.heap))
            .args([
                "--add-opens=java.base/java.lang=ALL-UNNAMED",
                "--add-opens=java.base/java.util=ALL-UNNAMED",
                "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
                "--add-opens=java.base/java.nio=ALL-UNNAMED",
                "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
                "--add-opens=java.base/java.io=ALL-UNNAMED",
                "--add-opens=java.base/java.net=ALL-UNNAMED",
                "--add-opens=java.base/sun.security.action=ALL-UNNAMED",
                "-Djava.net.preferIPv4Stack=true",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            ])
            .arg(format!("-Djava.io.tmpdir={}", tmp.display()))
            .arg("-cp")
            .arg(cp)
            .arg("dev.tegula.hadoop.TeraBench")
            .args(driver_args)
            .arg("--sync")
            // The local job runner links distributed-cache files (TeraSort's _partition.lst)
            // into the working directory: give it one of its own.
            .current_dir(tmp)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(logf);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("starting {} (is a JDK installed?)", a.java))?;
        let stdin = child.stdin.take().context("driver stdin")?;
        let stdout = child.stdout.take().context("driver stdout")?;
        Ok(Driver {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
        })
    }

    pub(super) fn next(&mut self) -> Result<Option<Event>> {
        for line in self.lines.by_ref() {
            let line = line?;
            if let Some(p) = line.strip_prefix("@start ") {
                return Ok(Some(Event::Start(p.trim().to_string())));
            }
            if let Some(p) = line.strip_prefix("@end ") {
                return Ok(Some(Event::End(p.trim().to_string())));
            }
            if let Some(r) = line.strip_prefix("@result ") {
                return Ok(Some(Event::Result(serde_json::from_str(r)?)));
            }
        }
        Ok(None)
    }

    pub(super) fn answer(&mut self, s: &str) -> Result<()> {
        writeln!(self.stdin, "{s}")?;
        self.stdin.flush()?;
        Ok(())
    }

    pub(super) fn finish(mut self, log: &Path) -> Result<()> {
        let st = self.child.wait()?;
        if !st.success() {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(30).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            bail!(
                "the Hadoop driver exited with {st} (log {}):\n{}",
                log.display(),
                tail.join("\n")
            );
        }
        Ok(())
    }
}
