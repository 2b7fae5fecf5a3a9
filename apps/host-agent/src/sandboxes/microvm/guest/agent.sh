# Guest agent (pid 1 after init.sh). Line protocol on the "ctl" virtio-serial port; the host is
# trusted, the step is not. Host -> guest:
#   PING                      -> PONG
#   PREP <unix-seconds> <b64> set the clock, mix fresh entropy into /dev/urandom -> PREP-OK
#                             (a restored snapshot shares clock and RNG state with every clone)
#   PUT <bytes>               read a tar of exactly <bytes> from "data" into /workspace -> PUT-OK | PUT-ERR
#   RUN <b64 launcher>        run one step -> START, then EXIT <status> <stdout bytes> <stderr bytes>
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

run_step() {
  echo "$1" | base64 -d > /run/step.sh || { echo "EXIT 126 0 0" >&3; return; }
  rm -f /run/o /run/e
  mkfifo /run/o /run/e
  dd if=/run/o bs=65536 2>/run/o.count >&5 & OUTP=$!
  dd if=/run/e bs=65536 2>/run/e.count >&6 & ERRP=$!
  setsid /bin/sh /run/step.sh </dev/null >/run/o 2>/run/e & STEP=$!
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
  sweep
  wait "$OUTP" "$ERRP"
  echo "EXIT $CODE $(copied /run/o.count) $(copied /run/e.count)" >&3
}

while IFS= read -r line <&3; do
  set -- $line
  case "$1" in
    PING) echo PONG >&3 ;;
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
      tar -c -C /newroot/workspace -f /run/ws.tar . 2>/dev/null
      echo "PULL $(wc -c < /run/ws.tar)" >&3
      cat /run/ws.tar >&4
      rm -f /run/ws.tar ;;
    *) echo "ERR unknown $1" >&3 ;;
  esac
done
poweroff -f
