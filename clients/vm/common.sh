# shellcheck shell=bash
# clients/vm/common.sh: helpers shared by initramfs.sh and run.sh (sourced, not run).
#
# Provides:
#   vm_say MSG...            print "tegula-vm: MSG" on stderr
#   vm_die MSG...            print "tegula-vm: error: MSG" on stderr and exit 1
#   vm_need CMD PACKAGE      fail unless CMD is on PATH, naming the Debian package
#   vm_kver                  print the kernel version to boot: $TEGULA_VM_KVER, or the
#                            newest /boot/vmlinuz-* whose modules are installed
#   vm_kernel KVER           print the kernel image path, failing if it is missing
# It also puts the sbin directories on PATH (Debian keeps blkzone, mkfs.* there).

PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}"
export PATH

vm_say() {
    printf 'tegula-vm: %s\n' "$*" >&2
}

vm_die() {
    printf 'tegula-vm: error: %s\n' "$*" >&2
    exit 1
}

vm_need() {
    command -v "$1" >/dev/null 2>&1 ||
        vm_die "'$1' not found: install the Debian package '$2' (apt-get install $2)"
}

vm_kver() {
    if [[ -n "${TEGULA_VM_KVER:-}" ]]; then
        printf '%s\n' "$TEGULA_VM_KVER"
        return
    fi
    local img ver best=""
    for img in /boot/vmlinuz-*; do
        [[ -e "$img" ]] || continue
        ver=${img#/boot/vmlinuz-}
        [[ -f "/lib/modules/$ver/modules.dep" ]] || continue
        if [[ -z "$best" ]] || [[ "$(printf '%s\n%s\n' "$best" "$ver" | sort -V | tail -n 1)" == "$ver" ]]; then
            best=$ver
        fi
    done
    [[ -n "$best" ]] ||
        vm_die "no kernel with modules in /boot and /lib/modules: install the Debian package 'linux-image-amd64' (apt-get install linux-image-amd64)"
    printf '%s\n' "$best"
}

vm_kernel() {
    local img="/boot/vmlinuz-$1"
    [[ -f "$img" ]] ||
        vm_die "kernel image $img not found: install the Debian package 'linux-image-amd64' (or set TEGULA_VM_KVER to an installed version)"
    [[ -r "$img" ]] || vm_die "kernel image $img is not readable by $(id -un) (run as root or chmod a+r it)"
    [[ -f "/lib/modules/$1/modules.dep" ]] ||
        vm_die "modules of kernel $1 not found in /lib/modules/$1: reinstall its Debian package linux-image-$1"
    printf '%s\n' "$img"
}
