#!/usr/bin/env bash
# clients/vm/run.sh: run a guest script in a Linux VM (QEMU, TCG) with zoned block devices.
#
# Usage: run.sh [options] GUEST_SCRIPT [EXTRA_BINARY...]
#   --timeout SECONDS  fail if the guest has not finished by then (default 1800)
#   --mem SIZE         guest memory, qemu syntax (default 7G; null_blk takes up to 4 GiB of it)
#   --smp N            virtual CPUs (default 2)
#   --share DIR        host directory the guest sees at /host (9p); default a fresh
#                      temporary directory, removed at the end unless --keep
#   --env NAME=VALUE   set a variable for the guest script (repeatable)
#   --strip-debug      strip debug info from the EXTRA_BINARY copies (smaller, faster boot)
#   --keep             keep the temporary directory (initramfs, ZNS image, logs)
#   --verbose          show every kernel message on the console (default: warnings and worse)
#   -h, --help         this text
# Environment: TEGULA_VM_KVER (kernel version, default the newest one installed),
#   TEGULA_VM_CACHE, TEGULA_VM_COMPRESS (see initramfs.sh), TMPDIR.
#
# It builds an initramfs (initramfs.sh) holding busybox, the needed kernel
# modules, the test programs, every EXTRA_BINARY (in the guest's PATH, at
# /usr/local/bin) and GUEST_SCRIPT, and boots the Debian kernel with it under
# qemu-system-x86_64 -accel tcg (never KVM), no network, with:
#   * /dev/nullb0: null_blk, 4 GiB in guest memory, host-managed zoned, 64 MiB
#     zones, 4 conventional zones (set up by the guest's /init, init.sh);
#   * /dev/nvme0n1: an emulated NVMe ZNS namespace, 64 MiB zones of 48 MiB
#     capacity, 14 open/active zones at most, backed by a sparse 4 GiB file in
#     the temporary directory;
#   * /host: the share directory (virtio 9p).
# The guest runs GUEST_SCRIPT with sh (dash), with TEGULA_VM_NULLB=/dev/nullb0,
# TEGULA_VM_ZNS=/dev/nvme0n1 and TEGULA_VM_SHARE=/host set, then powers off.
# The guest console goes to stdout; harness messages (timings included) to stderr.
# Exit status: the guest script's; 124 on timeout; 125 if the VM did not boot,
# the devices did not appear or the guest ended without reporting a status;
# 1 for a bad invocation or a missing host package. Nothing on the host is
# written but the temporary directory, the share and the initramfs cache.
set -euo pipefail

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh source-path=SCRIPTDIR
. "$VM_DIR/common.sh"

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}

timeout_s=1800
mem=7G
smp=2
share=""
keep=0
verbose=0
initramfs_args=()
while (($#)); do
    case $1 in
        --timeout) [[ $# -ge 2 ]] || vm_die "--timeout needs SECONDS"; timeout_s=$2; shift 2 ;;
        --mem) [[ $# -ge 2 ]] || vm_die "--mem needs a size"; mem=$2; shift 2 ;;
        --smp) [[ $# -ge 2 ]] || vm_die "--smp needs a count"; smp=$2; shift 2 ;;
        --share) [[ $# -ge 2 ]] || vm_die "--share needs a directory"; share=$2; shift 2 ;;
        --env) [[ $# -ge 2 ]] || vm_die "--env needs NAME=VALUE"; initramfs_args+=(--env "$2"); shift 2 ;;
        --strip-debug) initramfs_args+=(--strip-debug); shift ;;
        --keep) keep=1; shift ;;
        --verbose) verbose=1; shift ;;
        -h | --help) usage; exit 0 ;;
        --) shift; break ;;
        -*) vm_die "unknown option $1 (see --help)" ;;
        *) break ;;
    esac
done
[[ $# -ge 1 ]] || { usage >&2; exit 1; }
guest_script=$1
shift
[[ -f "$guest_script" ]] || vm_die "guest script '$guest_script' not found"
[[ "$timeout_s" =~ ^[1-9][0-9]*$ ]] || vm_die "--timeout wants a positive number of seconds, not '$timeout_s'"
[[ "$smp" =~ ^[1-9][0-9]*$ ]] || vm_die "--smp wants a positive number, not '$smp'"

vm_need qemu-system-x86_64 qemu-system-x86
vm_need busybox busybox-static
vm_need timeout coreutils
kver=$(vm_kver)
kernel=$(vm_kernel "$kver")

work=$(mktemp -d "${TMPDIR:-/tmp}/tegula-vm.XXXXXX")
qemu_pid=""
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
    if [[ -n "$qemu_pid" ]] && kill -0 "$qemu_pid" 2>/dev/null; then
        kill "$qemu_pid" 2>/dev/null || true
        wait "$qemu_pid" 2>/dev/null || true
    fi
    if ((keep)); then
        vm_say "kept $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ -z "$share" ]]; then
    share="$work/share"
    mkdir -p "$share"
    if ((keep)); then
        vm_say "share (guest /host): $share"
    else
        vm_say "share (guest /host): $share (removed at the end; use --keep or --share DIR to keep it)"
    fi
else
    [[ -d "$share" ]] || vm_die "--share $share is not a directory"
    share=$(cd "$share" && pwd)
    vm_say "share (guest /host): $share"
fi

t0=$EPOCHREALTIME
bash "$VM_DIR/initramfs.sh" --script "$guest_script" "${initramfs_args[@]+"${initramfs_args[@]}"}" "$work" "$@"
t_built=$EPOCHREALTIME

# The ZNS namespace's backing file: sparse, only written blocks take disk space.
truncate -s 4G "$work/zns.img"

loglevel=5
((verbose)) && loglevel=8
append="console=ttyS0,115200 panic=-1 loglevel=$loglevel mitigations=off TEGULA_VM_SHARE_TAG=host"

qemu=(
    qemu-system-x86_64
    -accel tcg -machine q35 -cpu max -smp "$smp" -m "$mem"
    -nodefaults -no-reboot -display none -monitor none
    -kernel "$kernel" -initrd "$work/initramfs.img" -append "$append"
    -serial stdio                     # ttyS0: the console
    -serial "file:$work/control.log"  # ttyS1: status lines from /init
    -drive "file=$work/zns.img,id=zns0,format=raw,if=none"
    -device "nvme,serial=tegulazns,id=nvme0"
    -device "nvme-ns,drive=zns0,bus=nvme0,nsid=1,zoned=true,zoned.zone_size=64M,zoned.zone_capacity=48M,zoned.max_open=14,zoned.max_active=14"
    -fsdev "local,id=hostfs,path=$share,security_model=none"
    -device "virtio-9p-pci,fsdev=hostfs,mount_tag=host"
)

mkfifo "$work/console.fifo"
: >"$work/control.log"
vm_say "booting kernel $kver under qemu TCG ($smp vCPUs, $mem), timeout ${timeout_s}s"
t_qemu=$EPOCHREALTIME
timeout --foreground --kill-after=10 "$timeout_s" "${qemu[@]}" <"/dev/null" >"$work/console.fifo" &
qemu_pid=$!

# Copy the console to stdout and console.log, noting when the script starts.
t_script=""
while IFS= read -r line || [[ -n "$line" ]]; do
    line=${line%$'\r'}
    printf '%s\n' "$line"
    printf '%s\n' "$line" >>"$work/console.log"
    if [[ -z "$t_script" && "$line" == TEGULA-VM-SCRIPT-START* ]]; then
        t_script=$EPOCHREALTIME
    fi
done <"$work/console.fifo"

set +e
wait "$qemu_pid"
qemu_rc=$?
set -e
qemu_pid=""
t_end=$EPOCHREALTIME

elapsed() { # elapsed FROM TO: seconds, one decimal
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'
}

timing="initramfs $(elapsed "$t0" "$t_built") s"
if [[ -n "$t_script" ]]; then
    timing+=", boot to script start $(elapsed "$t_qemu" "$t_script") s, script and power-off $(elapsed "$t_script" "$t_end") s"
fi
timing+=", total $(elapsed "$t0" "$t_end") s"
vm_say "timing: $timing"

# Kernel trouble is worth a word even when the script passed.
oopses=$(grep -cE 'WARNING: CPU|BUG:|Oops|Kernel panic|general protection fault' "$work/console.log" 2>/dev/null || true)
if [[ "${oopses:-0}" -gt 0 ]]; then
    vm_say "warning: the guest kernel reported $oopses WARNING/BUG/Oops/panic line(s): see the console above"
fi

control=$(tr -d '\r' <"$work/control.log")
status=$(sed -n 's/^exit=\([0-9]*\)$/\1/p' <<<"$control" | tail -n 1)
if [[ -z "$status" ]]; then
    # Fall back on the console marker should the control port have lost it.
    status=$(sed -n 's/^TEGULA-VM-EXIT=\([0-9]*\)$/\1/p' "$work/console.log" 2>/dev/null | tail -n 1)
fi

if [[ $qemu_rc -eq 124 || $qemu_rc -eq 137 ]]; then
    vm_say "error: the guest did not finish within ${timeout_s}s (--timeout); qemu was killed"
    exit 124
fi
if [[ -n "$status" ]]; then
    if [[ $qemu_rc -ne 0 ]]; then
        vm_say "warning: qemu exited with status $qemu_rc after the guest script finished"
    fi
    vm_say "guest script exit status: $status"
    exit "$status"
fi
error=$(sed -n 's/^error=//p' <<<"$control" | tail -n 1)
if [[ -n "$error" ]]; then
    vm_say "error: guest setup failed: $error"
elif ! grep -qx booted <<<"$control"; then
    vm_say "error: the VM did not boot to /init (qemu status $qemu_rc); see the console above"
elif ! grep -qx devices-ok <<<"$control"; then
    vm_say "error: the guest stopped before its zoned devices were ready (qemu status $qemu_rc); see the console above"
else
    vm_say "error: the guest stopped without reporting the script's exit status (kernel panic, or the script powered off?); qemu status $qemu_rc"
fi
exit 125
