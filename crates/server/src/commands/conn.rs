//! Connection commands: PING, ECHO, HELLO, AUTH, QUIT, SELECT, CLIENT, COMMAND.

use super::{err, errors, int_arg, is, CmdResult, Ctx};
use crate::resp::Proto;

/// The Redis version the server reports (the protocol level it emulates).
pub const REDIS_VERSION: &str = "7.0.0";

/// `PING [message]`.
pub fn ping(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    match args.len() {
        1 => ctx.reply().simple("PONG"),
        2 => ctx.reply().bulk(args[1]),
        _ => return err("ERR wrong number of arguments for 'ping' command"),
    }
    Ok(())
}

/// `ECHO message`.
pub fn echo(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    ctx.reply().bulk(args[1]);
    Ok(())
}

fn check_password(ctx: &mut Ctx<'_>, user: &[u8], pass: &[u8]) -> CmdResult {
    let Some(want) = ctx.shared.opts.requirepass.as_ref() else {
        return err(
            "ERR AUTH <password> called without any password configured for the default user. \
             Are you sure your configuration is correct?",
        );
    };
    // Both compared whatever the user name, in time independent of the password's bytes.
    let pass_ok = want.matches(pass);
    if user != b"default" || !pass_ok {
        return err("WRONGPASS invalid username-password pair or user is disabled.");
    }
    ctx.conn.authed = true;
    Ok(())
}

/// `AUTH [username] password`.
pub fn auth(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    match args.len() {
        2 => check_password(ctx, b"default", args[1])?,
        3 => check_password(ctx, args[1], args[2])?,
        _ => return err(errors::SYNTAX),
    }
    ctx.reply().ok();
    Ok(())
}

/// `HELLO [protover [AUTH username password] [SETNAME name]]`: switches the protocol and
/// replies with the server's description.
pub fn hello(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut proto = ctx.conn.proto;
    let mut i = 1;
    if let Some(v) = args.get(1) {
        proto = match int_arg(v) {
            Ok(2) => Proto::Resp2,
            Ok(3) => Proto::Resp3,
            Ok(_) => return err("NOPROTO unsupported protocol version"),
            Err(_) => return err("ERR Protocol version is not an integer or out of range"),
        };
        i = 2;
    }
    let mut name = None;
    while i < args.len() {
        if is(args[i], "auth") && i + 2 < args.len() {
            check_password(ctx, args[i + 1], args[i + 2])?;
            i += 3;
        } else if is(args[i], "setname") && i + 1 < args.len() {
            name = Some(args[i + 1].to_vec());
            i += 2;
        } else {
            return err(format!(
                "ERR Syntax error in HELLO option '{}'",
                super::printable(args[i])
            ));
        }
    }
    if !ctx.conn.authed {
        return err(errors::NOAUTH);
    }
    ctx.conn.proto = proto;
    if name.is_some() {
        ctx.conn.name = name;
    }
    let id = ctx.conn.id as i64;
    let mut r = ctx.reply();
    r.map(7);
    r.bulk(b"server");
    r.bulk(b"redis");
    r.bulk(b"version");
    r.bulk(REDIS_VERSION.as_bytes());
    r.bulk(b"proto");
    r.int(proto.number());
    r.bulk(b"id");
    r.int(id);
    r.bulk(b"mode");
    r.bulk(b"standalone");
    r.bulk(b"role");
    r.bulk(b"master");
    r.bulk(b"modules");
    r.array(0);
    Ok(())
}

/// `QUIT`: replies OK and closes the connection once the reply is sent.
pub fn quit(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    ctx.conn.close = true;
    ctx.reply().ok();
    Ok(())
}

/// `SELECT index`: only database 0 exists.
pub fn select(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    match int_arg(args[1]) {
        Ok(0) => {
            ctx.reply().ok();
            Ok(())
        }
        Ok(_) => err("ERR DB index is out of range"),
        Err(e) => Err(e),
    }
}

/// `CLIENT ID | GETNAME | SETNAME name | SETINFO attr value | INFO`.
pub fn client(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = &args[1];
    if is(sub, "id") {
        let id = ctx.conn.id as i64;
        ctx.reply().int(id);
    } else if is(sub, "getname") {
        let name = ctx.conn.name.clone();
        ctx.reply().opt_bulk(name.as_deref());
    } else if is(sub, "setname") && args.len() == 3 {
        if args[2].iter().any(|b| !b.is_ascii_graphic()) {
            return err("ERR Client names cannot contain spaces, newlines or special characters.");
        }
        ctx.conn.name = (!args[2].is_empty()).then(|| args[2].to_vec());
        ctx.reply().ok();
    } else if is(sub, "setinfo") && args.len() == 4 {
        ctx.reply().ok();
    } else if is(sub, "info") {
        let line = format!(
            "id={} addr=? name={} db=0 resp={}\n",
            ctx.conn.id,
            String::from_utf8_lossy(ctx.conn.name.as_deref().unwrap_or_default()),
            ctx.conn.proto.number()
        );
        ctx.reply().verbatim(&line);
    } else {
        return err(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLIENT HELP.",
            super::printable(sub)
        ));
    }
    Ok(())
}

/// One command's `COMMAND` entry, under the name it answers to (after `rename-command`).
fn command_entry(ctx: &mut Ctx<'_>, name: &str, c: &super::CommandSpec) {
    let mut r = ctx.reply();
    r.array(6);
    r.bulk(name.as_bytes());
    r.int(i64::from(c.arity));
    r.set(c.flags.len());
    for f in c.flags {
        r.simple(f);
    }
    r.int(i64::from(c.first_key));
    r.int(i64::from(c.last_key));
    r.int(i64::from(c.step));
}

/// `COMMAND`, `COMMAND COUNT`, `COMMAND INFO name...`, `COMMAND LIST`, `COMMAND DOCS` (an
/// empty map: clients such as redis-cli then fall back to their built-in help).
/// Commands are listed under the names they answer to: a renamed command under its new
/// name, a disabled one not at all.
pub fn command(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let table = &ctx.shared.commands;
    let Some(sub) = args.get(1) else {
        ctx.reply().array(table.commands().len());
        for (name, c) in table.commands() {
            command_entry(ctx, name, c);
        }
        return Ok(());
    };
    if is(sub, "count") {
        ctx.reply().int(table.commands().len() as i64);
    } else if is(sub, "list") {
        ctx.reply().array(table.commands().len());
        for (name, _) in table.commands() {
            ctx.reply().bulk(name.as_bytes());
        }
    } else if is(sub, "info") {
        ctx.reply().array(args.len() - 2);
        for name in &args[2..] {
            let found = table.lookup(name).zip(std::str::from_utf8(name).ok());
            match found {
                Some((c, n)) => command_entry(ctx, &n.to_ascii_lowercase(), c),
                None => ctx.reply().null_array(),
            }
        }
    } else if is(sub, "docs") {
        ctx.reply().map(0);
    } else {
        return err(format!(
            "ERR unknown subcommand '{}'. Try COMMAND HELP.",
            super::printable(sub)
        ));
    }
    Ok(())
}
