#!/bin/busybox sh
# Guest /init (pid 1, from our initramfs). Loads the virtio modules the cloud kernel keeps as
# modules, mounts the job's root read-only under a tmpfs overlay (writes die with the VM), puts
# size-capped tmpfs on /tmp, /workspace and $HOME, then becomes the agent. Anything that fails here
# is reported on the kernel console and the VM powers off (the host sees QEMU exit, not a hang).
/bin/busybox --install -s /bin
export PATH=/bin
fail() { echo "kiln-init: $*" >/dev/console 2>/dev/null || echo "kiln-init: $*"; poweroff -f; }
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
# Order matters: virtio needs virtio_ring first ("Unknown symbol virtio_break_device" otherwise).
for m in virtio_ring virtio virtio_mmio virtio_blk virtio_console failover net_failover virtio_net overlay; do
  insmod "/lib/modules/$m.ko" || fail "insmod $m"
done
i=0
while [ ! -b /dev/vda ]; do
  i=$((i + 1)); [ $i -gt 500 ] && fail "no /dev/vda"
  usleep 10000
done
. /kiln/limits.sh
mkdir -p /lower /rw /newroot /run
mount -t ext4 -o ro /dev/vda /lower || fail "mount root"
mount -t tmpfs -o "size=$ROOT_RW_SIZE,mode=0755" rw /rw || fail "mount rw"
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /newroot || fail "mount overlay"
mkdir -p /newroot/workspace /newroot/home/kiln /newroot/tmp /newroot/proc /newroot/dev /newroot/sys
mount -t tmpfs -o "size=$TMP_SIZE,mode=1777" tmp /newroot/tmp || fail "mount tmp"
mount -t tmpfs -o "size=$WORKSPACE_SIZE,mode=0755" workspace /newroot/workspace || fail "mount workspace"
mount -t tmpfs -o "size=$HOME_SIZE,mode=0700" home /newroot/home/kiln || fail "mount home"
mount -t proc proc /newroot/proc
# A private /dev for steps: the virtio-serial ports stay reachable only by the agent.
mount -t tmpfs -o size=1m,mode=0755 devs /newroot/dev
mknod -m 666 /newroot/dev/null c 1 3
mknod -m 666 /newroot/dev/zero c 1 5
mknod -m 666 /newroot/dev/full c 1 7
mknod -m 666 /newroot/dev/random c 1 8
mknod -m 666 /newroot/dev/urandom c 1 9
mknod -m 666 /newroot/dev/tty c 5 0
ln -s /proc/self/fd /newroot/dev/fd
ln -s /proc/self/fd/0 /newroot/dev/stdin
ln -s /proc/self/fd/1 /newroot/dev/stdout
ln -s /proc/self/fd/2 /newroot/dev/stderr
# eth0 is QEMU's restricted user-mode network: its one reachable address is the egress proxy's
# guestfwd (10.0.2.100:3128). Configured before READY so a warm-pool snapshot has it up already
# (virtio-net reports NO-CARRIER for about 0.5 s after `up`).
ip link set lo up
if [ -e /sys/class/net/eth0 ]; then
  ip link set eth0 up || fail "eth0 up"
  ip addr add 10.0.2.15/24 dev eth0 || fail "eth0 address"
  ip route add default via 10.0.2.2 || fail "default route"
  i=0
  while [ "$(cat /sys/class/net/eth0/operstate)" != up ]; do
    i=$((i + 1)); [ $i -gt 500 ] && fail "eth0 never came up"
    usleep 10000
  done
fi
exec /bin/sh /kiln/agent.sh
