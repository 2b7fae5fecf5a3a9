#!/bin/busybox sh
# Guest /init (pid 1, from our initramfs). Loads the virtio modules the cloud kernel keeps as
# modules, mounts the job's root read-only, waits for the work disk, brings the network up, then
# becomes the agent (which mounts the job's writable view on the work disk at MOUNT: mount-root.sh). Anything that fails here
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
while [ ! -b /dev/vdb ]; do
  i=$((i + 1)); [ $i -gt 1000 ] && fail "no /dev/vdb (the work disk)"
  usleep 10000
done
mkdir -p /lower /rw /newroot /run
mount -t ext4 -o ro /dev/vda /lower || fail "mount root"
# Steps run in the "step" cgroup: pids.max is the size's process limit, pids.events tells the agent
# a step hit it, and cgroup.kill ends everything a step left behind at once (even a fork bomb).
mount -t cgroup2 cgroup2 /sys/fs/cgroup || fail "mount cgroup2"
echo +pids > /sys/fs/cgroup/cgroup.subtree_control || fail "pids controller"
mkdir /sys/fs/cgroup/step || fail "step cgroup"
# The job's root, /tmp, /workspace and $HOME are mounted on the work disk (/dev/vdb) only at the
# host's MOUNT (agent.sh): a warm-pool snapshot is taken before that, so a restored clone gets a
# fresh copy of the empty disk that its kernel has never mounted (no cached state to disagree with).
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
