# Guest agent (pid 1 after init.sh). Line protocol on the "ctl" virtio-serial port; the host is
# trusted, the step is not. Host -> guest:
#   PING                      -> PONG
#   MOUNT <max processes>     mount the job's root, /workspace, /tmp and $HOME on the work disk
#                             (/dev/vdb), set the step cgroup's pids.max -> MOUNT-OK | MOUNT-ERR
#   PREP <unix-seconds> <b64> set the clock, mix fresh entropy into /dev/urandom -> PREP-OK
#                             (a restored snapshot shares clock and RNG state with every clone)
#   PUT <bytes>               read a tar of exactly <bytes> from "data" into /workspace -> PUT-OK | PUT-ERR
#   RUN <b64 launcher>        run one step -> START, then EXIT <status> <stdout bytes> <stderr bytes>
#                             <limit>: disk_full, oom or pids_exhausted when a failed step ran into
#                             one of the size's limits, else "-"
#   KILL <SIGNAME>            (during RUN) signal the step's process group
#   PULL                      tar /workspace -> PULL <bytes>, then the tar on "data"
# Guest -> host once at boot: READY.
for d in /sys/class/virtio-ports/*; do
  eval "PORT_$(cat "$d/name")=/dev/${d##*/}"
done
exec 3<>"$PORT_ctl" 4<>"$PORT_data" 5>"$PORT_stdout" 6>"$PORT_stderr"
cd /
echo READY >&3

# dd reports "<n> bytes ... copied" on stderr; the host waits for exactly that many bytes per stream
# before it resolves the step, so nothing written just before exit can be lost or reordered.
copied() { sed -n 's/^\([0-9][0-9]*\) bytes.*/\1/p' "$1"; }

# Every process but pid 1 and the two stream copiers dies after a step: background jobs and
# escaped sessions must not run into the next step or hold the output pipes open.
sweep() {
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    case " 1 $OUTP $ERRP " in *" $p "*) ;; *) kill -9 "$p" 2>/dev/null ;; esac
  done
}

# The job's writable view, all on the work disk: the overlay's upper layer over the read-only root,
# /tmp, /workspace and $HOME. /rw/agent (outside the chroot) holds the agent's transfer files.
mount_root() {
  mount -t ext4 -o noinit_itable /dev/vdb /rw || return 1
  mkdir -p /rw/upper /rw/work /rw/tmp /rw/workspace /rw/home /rw/agent || return 1
  chmod 1777 /rw/tmp && chmod 0700 /rw/home /rw/agent || return 1
  mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /newroot || return 1
  mkdir -p /newroot/workspace /newroot/home/kiln /newroot/tmp /newroot/proc /newroot/dev /newroot/sys || return 1
  mount --bind /rw/tmp /newroot/tmp && mount --bind /rw/workspace /newroot/workspace &&
    mount --bind /rw/home /newroot/home/kiln && mount -t proc proc /newroot/proc || return 1
  # A private /dev for steps: the virtio-serial ports stay reachable only by the agent.
  mount -t tmpfs -o size=1m,mode=0755 devs /newroot/dev || return 1
  mknod -m 666 /newroot/dev/null c 1 3 && mknod -m 666 /newroot/dev/zero c 1 5 &&
    mknod -m 666 /newroot/dev/full c 1 7 && mknod -m 666 /newroot/dev/random c 1 8 &&
    mknod -m 666 /newroot/dev/urandom c 1 9 && mknod -m 666 /newroot/dev/tty c 5 0 || return 1
  # POSIX shared memory and semaphores (Python's multiprocessing, for one): the process driver's
  # private view has a /dev/shm too.
  mkdir /newroot/dev/shm && mount -t tmpfs -o nosuid,nodev,mode=1777,size=64m shm /newroot/dev/shm || return 1
  ln -s /proc/self/fd /newroot/dev/fd && ln -s /proc/self/fd/0 /newroot/dev/stdin &&
    ln -s /proc/self/fd/1 /newroot/dev/stdout && ln -s /proc/self/fd/2 /newroot/dev/stderr || return 1
  echo "$1" > /sys/fs/cgroup/step/pids.max
}

# Counters the kernel keeps: OOM kills (VM-wide) and refused forks in the step cgroup.
oom_kills() { sed -n 's/^oom_kill //p' /proc/vmstat; }
pids_refused() { sed -n 's/^max //p' /sys/fs/cgroup/step/pids.events; }

# Which of the size's limits a failed step ran into: the disk is (almost) full, the kernel killed
# a process for memory, or a fork was refused at pids.max. "-" when none.
limit_hit() {
  set -- $(stat -f -c '%a %S' /rw)
  if [ $(($1 * $2)) -lt 1048576 ]; then echo disk_full
  elif [ "$(oom_kills)" != "$OOM0" ]; then echo oom
  elif [ "$(pids_refused)" != "$PIDS0" ]; then echo pids_exhausted
  else echo -; fi
}

run_step() {
  echo "$1" | base64 -d > /run/step.sh || { echo "EXIT 126 0 0" >&3; return; }
  rm -f /run/o /run/e
  mkfifo /run/o /run/e
  dd if=/run/o bs=65536 2>/run/o.count >&5 & OUTP=$!
  dd if=/run/e bs=65536 2>/run/e.count >&6 & ERRP=$!
  echo -1000 > "/proc/$OUTP/oom_score_adj"; echo -1000 > "/proc/$ERRP/oom_score_adj"
  OOM0=$(oom_kills); PIDS0=$(pids_refused)
  setsid /bin/sh -c 'echo $$ > /sys/fs/cgroup/step/cgroup.procs && exec /bin/sh /run/step.sh' \
    </dev/null >/run/o 2>/run/e & STEP=$!
  echo START >&3
  (
    while IFS= read -r l <&3; do
      set -- $l
      case "$1" in KILL) kill -s "$2" -- "-$STEP" 2>/dev/null ;; esac
    done
  ) & WATCH=$!
  wait "$STEP"
  CODE=$?
  kill -9 "$WATCH" 2>/dev/null
  echo 1 > /sys/fs/cgroup/step/cgroup.kill
  sweep
  wait "$OUTP" "$ERRP"
  LIMIT=-
  [ "$CODE" = 0 ] || LIMIT=$(limit_hit)
  echo "EXIT $CODE $(copied /run/o.count) $(copied /run/e.count) $LIMIT" >&3
}

while IFS= read -r line <&3; do
  set -- $line
  case "$1" in
    PING) echo PONG >&3 ;;
    MOUNT)
      if mount_root "$2" 2>/run/mount.err; then echo MOUNT-OK >&3
      else echo "MOUNT-ERR $(head -c 200 /run/mount.err | tr '\n' ' ')" >&3; fi ;;
    PREP)
      date -s "@$2" >/dev/null 2>&1
      echo "$3" | base64 -d > /dev/urandom
      # A restored snapshot shares its CRNG state with every clone: reseed it from the pool that now
      # holds this job's entropy (see reseed.c), so no two jobs read the same bytes.
      [ -x /kiln/reseed ] && /kiln/reseed
      echo PREP-OK >&3 ;;
    PUT)
      if head -c "$2" <&4 | tar -x -C /newroot/workspace 2>/run/put.err; then echo PUT-OK >&3
      else echo "PUT-ERR $(head -c 200 /run/put.err | tr '\n' ' ')" >&3; fi ;;
    RUN) run_step "$2" ;;
    # A KILL that raced with the step's end: nothing to signal, and no reply (the host is not waiting).
    KILL) ;;
    PULL)
      tar -c -C /newroot/workspace -f /rw/agent/ws.tar . 2>/dev/null
      echo "PULL $(wc -c < /rw/agent/ws.tar)" >&3
      cat /rw/agent/ws.tar >&4
      rm -f /rw/agent/ws.tar ;;
    *) echo "ERR unknown $1" >&3 ;;
  esac
done
poweroff -f
