//! Exposure: protected mode, a password never shown, renamed and disabled commands.

use super::*;

/// Issue 33 item 9: `--bind 0.0.0.0` without a password serves loopback clients only, says so
/// at start-up, and refuses others with -DENIED; `--protected-mode no` serves them.
#[test]
fn protected_mode_serves_only_loopback_without_a_password() {
    let dir = tempfile::tempdir().unwrap();
    let img = database(dir.path());
    let s = Served::start(&img, &["--bind", "0.0.0.0"]);
    let mut c = s.client();
    assert_eq!(c.cmd(&[b"PING"]), b"+PONG");
    let note = s.stderr_with("protected mode is on");
    assert!(note.contains("protected mode is on"), "{note}");
    match outside_address() {
        None => {
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED (in part): no address other than loopback to connect from"
            );
        }
        Some(ip) => {
            let mut o = Client::connect(SocketAddr::new(ip, s.port));
            let r = o.read().unwrap();
            assert!(
                r.starts_with(b"-DENIED "),
                "{}",
                String::from_utf8_lossy(&r)
            );
            assert!(o.read().is_err(), "the connection is closed");
            drop(s);
            let s = Served::start(&img, &["--bind", "0.0.0.0", "--protected-mode", "no"]);
            let mut o = Client::connect(SocketAddr::new(ip, s.port));
            assert_eq!(o.cmd(&[b"PING"]), b"+PONG");
            let note = s.stderr_with("without a password and with protected mode off");
            assert!(
                note.contains("without a password and with protected mode off"),
                "{note}"
            );
        }
    }
}

/// Issue 33 item 9: the password from a file or the environment works and appears in no
/// error or log line, not even in the lock error another tegula command prints about the
/// server (it quotes the server's command line); `--requirepass` still works, with a warning.
#[test]
fn the_password_from_a_file_or_the_environment_is_never_shown() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let img = database(dir.path());
    let secret = "Tr0ub4dor-33-secret";
    let file = dir.path().join("pass");
    std::fs::write(&file, format!("{secret}\n")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let s = Served::start(&img, &["--requirepass-file", file.to_str().unwrap()]);
    let mut c = s.client();
    assert!(c.cmd(&[b"GET", b"k"]).starts_with(b"-NOAUTH"));
    assert!(c.cmd(&[b"AUTH", b"wrong"]).starts_with(b"-WRONGPASS"));
    assert_eq!(c.cmd(&[b"AUTH", secret.as_bytes()]), b"+OK");
    let other = tegula()
        .args(["db", "get"])
        .arg(&img)
        .args(["k", "--lock-wait", "0"])
        .output()
        .unwrap();
    assert!(!other.status.success());
    let msg = String::from_utf8_lossy(&other.stderr).to_string();
    assert!(msg.contains("serve resp"), "the holder is named: {msg}");
    assert!(!msg.contains(secret), "{msg}");
    s.signal(libc::SIGTERM);
    let (status, err) = s.wait();
    assert!(status.success(), "{err}");
    assert!(!err.contains(secret) && !err.contains("warning"), "{err}");
    // A file others can read: served, with a warning.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let s = Served::start(&img, &["--requirepass-file", file.to_str().unwrap()]);
    assert!(s
        .stderr_with("can be read by other users")
        .contains("can be read by other users"));
    drop(s);
    // The environment.
    let s = Served::start_env(&img, &[], &[("TEGULA_REQUIREPASS", secret)]);
    let mut c = s.client();
    assert!(c.cmd(&[b"GET", b"k"]).starts_with(b"-NOAUTH"));
    assert_eq!(c.cmd(&[b"AUTH", secret.as_bytes()]), b"+OK");
    drop(s);
    // On the command line: works, with a warning.
    let s = Served::start(&img, &["--requirepass", secret]);
    let mut c = s.client();
    assert_eq!(c.cmd(&[b"AUTH", secret.as_bytes()]), b"+OK");
    let err = s.stderr_with("warning: --requirepass puts the password on the command line");
    assert!(
        err.contains("warning: --requirepass puts the password on the command line"),
        "{err}"
    );
    assert!(!err.contains(secret), "{err}");
    drop(s);
    // Errors about a bad password source never quote it.
    std::fs::write(&file, format!("{secret}\nsecond line\n")).unwrap();
    let out = tegula()
        .args(["serve", "resp"])
        .arg(&img)
        .args(["--port", &free_port().to_string(), "--requirepass-file"])
        .arg(&file)
        .output()
        .unwrap();
    let msg = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        !out.status.success() && msg.contains("more than one line"),
        "{msg}"
    );
    assert!(!msg.contains(secret), "{msg}");
}

/// Issue 33 item 9: FLUSHALL, FLUSHDB, SHUTDOWN and CONFIG can be renamed or disabled.
#[test]
fn rename_command_disables_or_renames_dangerous_commands() {
    let dir = tempfile::tempdir().unwrap();
    let img = database(dir.path());
    let mut s = Served::start(
        &img,
        &[
            "--rename-command",
            "FLUSHALL",
            "",
            "--rename-command",
            "FLUSHDB",
            "",
            "--rename-command",
            "CONFIG",
            "",
            "--rename-command",
            "SHUTDOWN",
            "stop-now-7",
        ],
    );
    let mut c = s.client();
    assert_eq!(c.cmd(&[b"SET", b"k", b"v"]), b"+OK");
    for gone in [
        &[&b"FLUSHALL"[..]][..],
        &[b"flushdb"],
        &[b"CONFIG", b"GET", b"*"],
        &[b"SHUTDOWN"],
    ] {
        let r = c.cmd(gone);
        assert!(
            r.starts_with(b"-ERR unknown command"),
            "{}",
            String::from_utf8_lossy(&r)
        );
    }
    assert!(s.running());
    assert_eq!(c.cmd(&[b"GET", b"k"]), b"v");
    if have("redis-cli") {
        let out = Command::new("redis-cli")
            .args(["-p", &s.port.to_string(), "flushall"])
            .output()
            .unwrap();
        assert!(ok(&out).contains("unknown command"));
    }
    c.send(&[b"STOP-NOW-7"]).unwrap();
    let (status, err) = s.wait();
    assert!(status.success(), "{err}");
    // A name that is no command is refused before anything starts.
    let out = tegula()
        .args(["serve", "resp"])
        .arg(&img)
        .args([
            "--port",
            &free_port().to_string(),
            "--rename-command",
            "FLUSHEVERYTHING",
            "",
        ])
        .output()
        .unwrap();
    let msg = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        !out.status.success() && msg.contains("no such command"),
        "{msg}"
    );
}
