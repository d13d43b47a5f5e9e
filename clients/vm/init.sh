#!/bin/sh
# shellcheck shell=sh
# clients/vm/init.sh: the guest's /init (PID 1) in the tegula test VM.
#
# initramfs.sh copies this file into the initramfs as /init; it runs under the
# guest's /bin/sh (dash, with busybox for the tools), never on the host. It:
#   1. mounts devtmpfs /dev, proc, sysfs, devpts, tmpfs /tmp and /run, configfs;
#   2. loads the kernel modules listed in /etc/tegula-vm/modules (fuse, f2fs,
#      btrfs, zonefs, dm-zoned, nvme, 9p, ...) and null_blk as a 4 GiB
#      memory-backed host-managed zoned disk (64 MiB zones, 4 conventional);
#   3. mounts the host share (9p, mount tag "host") at /host when the kernel
#      command line says TEGULA_VM_SHARE_TAG=host (run.sh does);
#   4. waits for /dev/nullb0 and the emulated NVMe ZNS namespace /dev/nvme0n1 and
#      checks that both are host-managed zoned block devices;
#   5. runs the guest script /etc/tegula-vm/guest.sh with sh in /tmp, stdin
#      /dev/null, PATH including /usr/local/bin (the extra binaries) and
#      TEGULA_VM_NULLB, TEGULA_VM_ZNS, TEGULA_VM_SHARE in the environment;
#   6. reports its exit status and powers the guest off.
# Progress goes to the host on two channels: marker lines on the console
# (ttyS0: TEGULA-VM-BOOTED, TEGULA-VM-SCRIPT-START, TEGULA-VM-EXIT=<n>, and
# TEGULA-VM-ERROR: <why> when the setup fails) and the same events, one a
# line, on the control port ttyS1 (booted, devices-ok, script-start, exit=<n>,
# error=<why>), which run.sh reads to learn the exit status.

PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin
HOME=/root
export PATH HOME

# devtmpfs first: the initramfs may hold no /dev/console, so stdio is reopened.
mount -t devtmpfs -o mode=0755 devtmpfs /dev
exec </dev/console >/dev/console 2>&1

CTL=/dev/ttyS1

ctl() {
    # Each write opens and closes the port: the last close waits until the
    # bytes have left the UART, so nothing is lost at power-off.
    if [ -c "$CTL" ]; then
        echo "$*" >"$CTL" 2>/dev/null || true
    fi
}

halt_guest() {
    sync
    sleep 0.3 # let the console drain its last lines
    poweroff -f
    # poweroff -f should not return; if it does, make the kernel stop (panic=-1
    # and qemu -no-reboot turn that into a qemu exit).
    exit "$1"
}

setup_failed() {
    echo "TEGULA-VM-ERROR: $*"
    echo "--- last kernel messages ---"
    dmesg | tail -n 40
    ctl "error=$*"
    halt_guest 125
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mkdir -p /dev/pts /dev/shm /tmp /run /mnt /host
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=0755 tmpfs /run
ln -sf /proc/self/fd /dev/fd 2>/dev/null || true
hostname tegula-vm 2>/dev/null || true

echo "TEGULA-VM-BOOTED kernel $(uname -r), uptime $(cut -d' ' -f1 /proc/uptime) s"
ctl booted

# configfs first: null_blk registers its configfs interface at load.
modprobe configfs || setup_failed "cannot load module configfs"
mount -t configfs configfs /sys/kernel/config || setup_failed "cannot mount configfs"

modprobe null_blk nr_devices=1 zoned=1 zone_size=64 zone_nr_conv=4 gb=4 memory_backed=1 ||
    setup_failed "cannot load module null_blk"

while read -r mod optional; do
    case $mod in '' | '#'*) continue ;; esac
    if ! modprobe "$mod" 2>/tmp/modprobe.err; then
        if [ "$optional" = optional ]; then
            continue # e.g. a CPU-accelerated variant the emulated CPU lacks
        fi
        cat /tmp/modprobe.err
        setup_failed "cannot load module $mod"
    fi
done </etc/tegula-vm/modules

TEGULA_VM_SHARE=""
if [ -n "${TEGULA_VM_SHARE_TAG:-}" ]; then
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 "$TEGULA_VM_SHARE_TAG" /host ||
        setup_failed "cannot mount the 9p share '$TEGULA_VM_SHARE_TAG' at /host"
    TEGULA_VM_SHARE=/host
fi
unset TEGULA_VM_SHARE_TAG

wait_zoned() {
    dev=$1
    name=${dev#/dev/}
    tries=0
    while [ ! -b "$dev" ] || [ ! -r "/sys/block/$name/queue/zoned" ]; do
        tries=$((tries + 1))
        [ "$tries" -le 300 ] || setup_failed "$dev did not appear within 30 s"
        sleep 0.1
    done
    model=$(cat "/sys/block/$name/queue/zoned")
    [ "$model" = host-managed ] || setup_failed "$dev is '$model', not a host-managed zoned device"
}

TEGULA_VM_NULLB=/dev/nullb0
TEGULA_VM_ZNS=/dev/nvme0n1
wait_zoned "$TEGULA_VM_NULLB"
wait_zoned "$TEGULA_VM_ZNS"
export TEGULA_VM_NULLB TEGULA_VM_ZNS TEGULA_VM_SHARE
ctl devices-ok

# Variables given with run.sh --env.
if [ -f /etc/tegula-vm/env ]; then
    # shellcheck disable=SC1091
    . /etc/tegula-vm/env
fi

[ -f /etc/tegula-vm/guest.sh ] || setup_failed "no guest script in the initramfs"

echo "TEGULA-VM-SCRIPT-START uptime $(cut -d' ' -f1 /proc/uptime) s"
ctl script-start
cd /tmp || setup_failed "no /tmp"
sh /etc/tegula-vm/guest.sh </dev/null
rc=$?
cd / || true
echo "TEGULA-VM-SCRIPT-END uptime $(cut -d' ' -f1 /proc/uptime) s"
if [ "$rc" -ne 0 ]; then
    echo "--- last kernel messages (guest script failed) ---"
    dmesg | tail -n 40
fi

sync
if [ -n "$TEGULA_VM_SHARE" ]; then
    umount /host 2>/dev/null || true
fi
echo "TEGULA-VM-EXIT=$rc"
ctl "exit=$rc"
halt_guest "$rc"
