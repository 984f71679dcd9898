#!/usr/bin/env bash
# tests/hosts/hosts.sh: several "hosts" on this machine for the multi-node tests. Each host is a
# network namespace (its own loopback and one link, eth0, to a bridge in a switch namespace of its
# own), a UTS namespace (its own hostname) and a mount namespace whose /tmp is its own scratch
# (Open MPI's and PMIx's session files, a node's local disk) and whose /dev/shm is its own (Open
# MPI's shared-memory segments), with the shared folder at its usual
# path in every host, as a cluster's parallel file system is. A keeper process (sleep) holds each
# host's namespaces: it stands for the host's kernel, and `kill` spares it. Nothing is added to
# the machine's own namespaces but the namespaces' names in /run/netns, which carry this run's
# prefix, so two runs side by side do not meet.
#
#   tests/hosts/hosts.sh up DIR N SHARED...   N hosts (2 or 3) nsth-a, nsth-b, ... at 10.213.0.1, .2, ...;
#                                          each SHARED folder (the test's folder, the checkout, the
#                                          build: any of them may live under /tmp) is seen by every
#                                          host at its own path; writes
#                                          DIR/hosts ("NAME NETNS ADDRESS"); exit 3 with the reason
#                                          when the namespaces cannot be made here, 1 when they
#                                          can but a host's set-up failed
#   tests/hosts/hosts.sh down DIR          every process of every host SIGKILLed, the namespaces gone
#   tests/hosts/hosts.sh exec DIR HOST CMD...   CMD on HOST (its network, hostname and /tmp, TMPDIR=/tmp), in this folder
#   tests/hosts/hosts.sh cut DIR HOST      HOST's cable pulled at the switch: its packets vanish, no error
#   tests/hosts/hosts.sh mend DIR HOST     and plugged back
#   tests/hosts/hosts.sh refuse DIR HOST PORTS   HOST refuses TCP connections to PORTS (iptables, "A:B"),
#                                          as a firewall would; exit 3 with the reason where it cannot
#   tests/hosts/hosts.sh accept DIR HOST   and accepts them again
#   tests/hosts/hosts.sh kill DIR HOST     every process of HOST SIGKILLed (a node lost); prints the count
#   tests/hosts/hosts.sh pids DIR HOST     the processes of HOST (its keeper left out)
set -u
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
cmd=${1:?usage: hosts.sh up|down|exec|cut|mend|kill|pids DIR ...}
D=${2:?hosts.sh: DIR}
[ "$cmd" = up ] && mkdir -p "$D"
D=$(readlink -f "$D")
skip() { echo "cannot make hosts: $*" >&2; exit 3; }
netns() { awk -v h="$1" '$1 == h { print $2 }' "$D/hosts"; }
keeper() { cat "$D/keeper-$1" 2>/dev/null; }
switch() { echo "$(cat "$D/prefix")-sw"; }
host_pids() {
  local n k; n=$(netns "$1") k=$(keeper "$1")
  [ -n "$n" ] && ip netns pids "$n" 2>/dev/null | grep -vx "${k:-none}"
}

# a host's mounts, run by sh in the host's new namespaces with HOST SCRATCH SHARED...: its hostname,
# a /dev/shm of its own (Open MPI's shared-memory segments are named by host and job: two runs'
# nsth-a, each with its Slurm's job 3, met in the machine's), each shared folder bound into
# SCRATCH at its path under /tmp, SCRATCH over /tmp; the keeper then
# writes its pid to its fd 3 (opened before the mounts hid the folder it is in) and holds them
MOUNTS='h=$1 scratch=$2; shift 2
  hostname "$h" || exit 1
  mount -t tmpfs -o mode=1777 nsth-shm /dev/shm || exit 1
  for shared; do mount --bind "$shared" "$scratch/${shared#/tmp/}" || exit 1; done
  mount --rbind "$scratch" /tmp'

# host_up NAME INDEX SHARED...: the host's link, then its keeper in new UTS and mount namespaces
host_up() {
  local h=$1 i=$2 n shared binds=()
  shift 2
  n="$(cat "$D/prefix")-$h"
  ip netns add "$n" 2>"$D/ip.err" || skip "ip netns add: $(tail -n 1 "$D/ip.err")"
  echo "$h $n 10.213.0.$((i + 1))" >>"$D/hosts"
  # the link is made in the switch namespace and its far end moved into the host's
  ip -n "$(switch)" link add "port-$h" type veth peer name eth0 netns "$n" 2>"$D/ip.err" || skip "veth: $(tail -n 1 "$D/ip.err")"
  ip -n "$(switch)" link set "port-$h" master br0 up
  ip -n "$n" addr add "10.213.0.$((i + 1))/24" dev eth0
  ip -n "$n" link set eth0 up
  ip -n "$n" link set lo up
  # the host's /tmp: its scratch folder, with each shared folder under /tmp bound in at its own
  # path (outside /tmp the host sees the machine's own folders already)
  mkdir -p "$D/scratch-$h"
  for shared in "$@"; do
    case $shared in /tmp/?*) mkdir -p "$D/scratch-$h/${shared#/tmp/}" && binds+=("$shared") ;; esac
  done
  # (the paths go in as the shell's arguments, not into its script: a folder named o'brien stays whole)
  nsenter --net="/run/netns/$n" unshare --uts --mount --propagation private \
    sh -c "$MOUNTS"' && echo $$ >&3 && exec sleep infinity 3>&-' sh "$h" "$D/scratch-$h" "${binds[@]}" \
    </dev/null >/dev/null 2>"$D/mnt.err" 3>"$D/keeper-$h.new" &
  # (follows the keeper: it writes its file or exits, however long a loaded machine takes)
  local kp=$!
  while kill -0 $kp 2>/dev/null && [ ! -s "$D/keeper-$h.new" ]; do sleep 0.05; done
  if [ ! -s "$D/keeper-$h.new" ]; then
    # the machine's refusal is a skip; but where a hostname and a /tmp of its own can be had (the
    # probe: its own literal, not MOUNTS, whose slip would fail both), the fault is in the keeper's
    # shared folders or in MOUNTS: exit 1, not a skip
    mkdir -p "$D/probe"
    nsenter --net="/run/netns/$n" unshare --uts --mount --propagation private sh -c 'hostname "$1" && mount --rbind "$2" /tmp' sh "$h" \
      "$D/probe" </dev/null >/dev/null 2>&1 \
      || skip "a host's hostname and /tmp (unshare --uts --mount): $(tail -n 1 "$D/mnt.err")"
    echo "hosts.sh: host $h's keeper did not start (unshare works here): $(tail -n 1 "$D/mnt.err")" >&2
    exit 1
  fi
  mv "$D/keeper-$h.new" "$D/keeper-$h"
}

up() {
  local n=$1 i s shared=()
  shift
  # each folder once, and none inside another (its parent's bind shows it)
  for s in "$@"; do shared+=("$(readlink -f "$s")"); done
  mapfile -t shared < <(printf '%s\n' "${shared[@]}" | LC_ALL=C sort -u | awk '{ for (i = 1; i <= n; i++) if (index($0, k[i] "/") == 1) next; k[++n] = $0; print }')
  [ "$(id -u)" -eq 0 ] || skip "not root (network namespaces need it: run make test as root to include these checks)"
  for b in ip nsenter unshare; do command -v $b >/dev/null || skip "$b not installed (iproute2, util-linux)"; done
  echo "nsth$$" >"$D/prefix"
  : >"$D/hosts"
  ip netns add "$(switch)" 2>"$D/ip.err" || skip "ip netns add: $(tail -n 1 "$D/ip.err")"
  ip -n "$(switch)" link add br0 type bridge 2>"$D/ip.err" && ip -n "$(switch)" link set br0 up || skip "no bridge: $(tail -n 1 "$D/ip.err")"
  for ((i = 0; i < n; i++)); do host_up "nsth-$(printf "\\x$(printf %x $((97 + i)))")" $i "${shared[@]}"; done
}

down() {
  local h n
  [ -f "$D/prefix" ] || return 0
  # twice: a process may fork while the first round kills
  for _ in 1 2; do
    while read -r h n _; do ip netns pids "$n" 2>/dev/null | xargs -r kill -KILL 2>/dev/null; done <"$D/hosts"
    sleep 0.2
  done
  while read -r h n _; do ip netns del "$n" 2>/dev/null; rm -f "$D/keeper-$h"; done <"$D/hosts"
  ip netns del "$(switch)" 2>/dev/null
  rm -f "$D/prefix"
}

case $cmd in
  up) : "${4:?hosts.sh up DIR N SHARED...}"; up "${@:3}" ;;
  down) down ;;
  # (TMPDIR: the host's own /tmp, a node's local disk, whatever folder the user's TMPDIR names)
  exec) h=$3; shift 3; exec nsenter -t "$(keeper "$h")" --net --uts --mount --wd="$PWD" -- env TMPDIR=/tmp "$@" ;;
  cut) ip -n "$(switch)" link set "port-$3" down ;;
  mend) ip -n "$(switch)" link set "port-$3" up ;;
  refuse)
    h=$3; no_filter() { echo "cannot filter on $h: $*" >&2; exit 3; }
    command -v iptables >/dev/null || no_filter "no iptables (scripts/install-deps.sh --test installs it)"
    ip netns exec "$(netns "$h")" iptables -A INPUT -p tcp --dport "${4:?hosts.sh refuse DIR HOST PORTS}" -j REJECT --reject-with tcp-reset \
      2>"$D/ipt.err" || no_filter "iptables: $(head -n 1 "$D/ipt.err")" ;;
  accept) ip netns exec "$(netns "$3")" iptables -F INPUT ;;
  pids) host_pids "$3" ;;
  kill) p=$(host_pids "$3"); [ -n "$p" ] && kill -KILL $p 2>/dev/null; wc -w <<<"$p" ;;
  *) echo "hosts.sh: unknown command $cmd" >&2; exit 2 ;;
esac
