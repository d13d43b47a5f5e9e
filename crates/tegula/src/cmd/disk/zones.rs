//! Zone management: `disk reset|open|close|finish`.

use super::{open_zoned, Access, ImageArg};
use crate::output;
use anyhow::{bail, Context, Result};
use clap::{ArgGroup, Args};
use serde::Serialize;
use tegula_device::{Zone, ZoneAction, ZoneFilter, ZoneTarget, ZonedDevice};

/// Which zones a zone command applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ZoneSelect {
    /// These zone indexes, in order.
    List(Vec<u32>),
    /// Every zone the action applies to (ZBC's ALL bit).
    All,
}

/// Arguments of the zone management commands.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("which").required(true).args(["zone", "zones", "all"])))]
pub struct ZoneArgs {
    #[command(flatten)]
    img: ImageArg,
    /// One zone.
    #[arg(long, value_name = "Z")]
    zone: Option<u32>,
    /// A range of zones: A..B (B excluded) or A..=B (B included).
    #[arg(long, value_name = "A..B")]
    zones: Option<String>,
    /// Every sequential zone the action applies to.
    #[arg(long)]
    all: bool,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    json: bool,
}

/// One zone's change in the JSON result.
#[derive(Serialize)]
struct ZoneChange {
    zone: u32,
    before: Zone,
    after: Zone,
}

/// The JSON result of a zone management command.
#[derive(Serialize)]
struct ActionJson {
    action: &'static str,
    changed: Vec<ZoneChange>,
    commands: u64,
    service_ns: u64,
}

/// Parses `A..B` (half-open) or `A..=B` (inclusive).
pub fn parse_range(s: &str) -> Result<Vec<u32>> {
    let bad = || format!("--zones {s}: expected A..B (B excluded) or A..=B, e.g. 2..5");
    let (a, b, inclusive) = if let Some((a, b)) = s.split_once("..=") {
        (a, b, true)
    } else if let Some((a, b)) = s.split_once("..") {
        (a, b, false)
    } else {
        bail!(bad());
    };
    let a: u32 = a.trim().parse().with_context(bad)?;
    let b: u32 = b.trim().parse().with_context(bad)?;
    let end = if inclusive { b.saturating_add(1) } else { b };
    if end <= a {
        bail!("--zones {s}: the range is empty");
    }
    Ok((a..end).collect())
}

impl ZoneArgs {
    fn select(&self) -> Result<ZoneSelect> {
        Ok(match (&self.zone, &self.zones, self.all) {
            (Some(z), _, _) => ZoneSelect::List(vec![*z]),
            (_, Some(r), _) => ZoneSelect::List(parse_range(r)?),
            _ => ZoneSelect::All,
        })
    }
}

fn describe(z: &Zone) -> String {
    format!("{} (wp {})", z.condition, z.write_pointer_lba)
}

/// Runs a zone management command.
pub fn run(action: ZoneAction, a: ZoneArgs) -> Result<()> {
    let sel = a.select()?;
    let disk = open_zoned(&a.img.image, Access::ReadWrite)?;
    let result = apply(disk.dev(), action, &sel, a.json);
    let closed = disk.close(&a.img.image);
    result?;
    closed
}

fn apply(disk: &dyn ZonedDevice, action: ZoneAction, sel: &ZoneSelect, json: bool) -> Result<()> {
    let info = disk.info();
    let zones = info.zones;
    let before = disk.report_zones(ZoneFilter::All);
    let (mut service, mut commands) = (0, 0);
    let mut failed = None;
    match sel {
        ZoneSelect::All => match disk.zone_action(action, ZoneTarget::All) {
            Ok(d) => {
                service += d.service();
                commands += 1;
            }
            Err(e) => failed = Some(e),
        },
        ZoneSelect::List(list) => {
            if let Some(&last) = list.last() {
                if last >= zones {
                    bail!(
                        "--zones asks for zones up to {last}, but the device has {zones} zones, \
                         0 to {}",
                        zones.saturating_sub(1)
                    );
                }
            }
            for &z in list {
                match disk.zone_action(action, ZoneTarget::One(z)) {
                    Ok(d) => {
                        service += d.service();
                        commands += 1;
                    }
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
        }
    }
    let after = disk.report_zones(ZoneFilter::All);
    if json {
        if let Some(e) = failed {
            return Err(e.into());
        }
        let changed = before
            .iter()
            .zip(&after)
            .filter(|(b, z)| b != z)
            .map(|(b, z)| ZoneChange {
                zone: z.index,
                before: b.clone(),
                after: z.clone(),
            })
            .collect();
        return output::print_json(&ActionJson {
            action: action.name(),
            changed,
            commands,
            service_ns: service,
        });
    }
    let mut changed = 0;
    for (b, z) in before.iter().zip(&after) {
        let named = matches!(sel, ZoneSelect::List(l) if l.contains(&z.index));
        if b != z || (named && failed.is_none()) {
            if b != z {
                changed += 1;
            }
            println!("zone {}: {} -> {}", z.index, describe(b), describe(z));
        }
    }
    if let Some(e) = failed {
        return Err(e.into());
    }
    if matches!(sel, ZoneSelect::All) && changed == 0 {
        println!("no zone needed to {}", action.name());
    }
    eprintln!(
        "{} {}: {} {} in {commands} command{}",
        action.name(),
        match sel {
            ZoneSelect::All => "--all".to_string(),
            ZoneSelect::List(l) if l.len() == 1 => format!("zone {}", l[0]),
            ZoneSelect::List(l) => format!("{} zones", l.len()),
        },
        output::ms(service),
        if info.wall_time {
            "measured"
        } else {
            "modelled"
        },
        if commands == 1 { "" } else { "s" }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_half_open_and_inclusive() {
        assert_eq!(parse_range("2..5").unwrap(), vec![2, 3, 4]);
        assert_eq!(parse_range("2..=5").unwrap(), vec![2, 3, 4, 5]);
        assert!(parse_range("5..2").is_err());
        assert!(parse_range("x..2").is_err());
        assert!(parse_range("7").is_err());
    }
}
