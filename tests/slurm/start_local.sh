#!/usr/bin/env bash
# tests/slurm/start_local.sh: start a one-node Slurm cluster on localhost for the tests, or one
# node per host of tests/hosts/hosts.sh.
#
#   tests/slurm/start_local.sh DIR      -> prints "export SLURM_CONF=DIR/slurm.conf" on success
#   tests/slurm/start_local.sh DIR --hosts HOSTS_DIR
#                                       one node per host of HOSTS_DIR/hosts (NodeAddr its address),
#                                       slurmctld on the first, each slurmd in its host; the
#                                       commands (sbatch, squeue, ...) must run in a host too
#   tests/slurm/start_local.sh --stop DIR
#
# Debian's slurm-wlm and munge (scripts/install-deps.sh --test): a munge key and daemon, then
# slurmctld and slurmd from a generated slurm.conf (one node with this machine's CPUs and memory,
# proctrack/linuxproc, task/none, no accounting, JobRequeue=1, MpiDefault=none) whose state,
# spool and logs live under DIR. Exit status 3 with a reason when Slurm cannot be started here
# (not root, packages missing, daemons refusing): the tests SKIP on it.
set -u
# numbers with a decimal point in any locale (awk, printf, sort -n): a user's LC_ALL becomes LANG
[ -z "${LC_ALL:-}" ] || { export LANG="$LC_ALL"; unset LC_ALL; }; export LC_NUMERIC=C
if [ "${1:-}" = "--stop" ]; then
  D=$2
  pids=$(cat "$D"/slurmd*.pid "$D/slurmctld.pid" 2>/dev/null)
  for p in $pids; do kill "$p" 2>/dev/null; done
  # until they have gone (a daemon's stop has no progress to follow: 30 s, many times its usual
  # fraction of a second; then SIGKILL)
  for _ in $(seq 300); do alive=; for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done; [ -z "$alive" ] && exit 0; sleep 0.1; done
  for p in $pids; do kill -KILL "$p" 2>/dev/null; done
  exit 0
fi
D=$(readlink -f "$1")
HD=""
[ "${2:-}" = "--hosts" ] && HD=$(readlink -f "${3:?--hosts HOSTS_DIR}")
HOSTS=$(cd "$(dirname "$0")/../hosts" && pwd)/hosts.sh
skip() { echo "cannot start Slurm: $*" >&2; exit 3; }
[ "$(id -u)" -eq 0 ] || skip "not root (slurmd and munged need it: run make test as root to include these checks)"
for b in slurmctld slurmd munged sbatch scontrol; do command -v "$b" >/dev/null || PATH=$PATH:/usr/sbin; command -v "$b" >/dev/null || skip "$b not installed (scripts/install-deps.sh --test)"; done
mkdir -p "$D/state" "$D/spool" "$D/log"
host=$(hostname -s)
cpus=$(nproc --all)  # not plain nproc: it honours OMP_NUM_THREADS (1 on many login nodes)
mem=$(awk '/MemTotal/ { printf "%d", $2 / 1024 * 0.9 }' /proc/meminfo)

# one start at a time on this machine (test_slurm and test_hosts run side by side, as do two
# checkouts' make test): the munge daemon that every run shares is started once, and each
# one-node cluster takes its ports while no other is choosing (the hosts' Slurm lets go after
# munge: its ports are in the hosts' own network namespaces)
exec {lock}>"$(if [ -w /run/lock ]; then echo /run/lock; else echo /tmp; fi)/nstbatch-test-slurm.lock"
command -v flock >/dev/null && { flock -w 600 "$lock" || skip "another run held the lock on Slurm's start for 600 s"; }

# munge: the key and the daemon (shared by every test run on this machine)
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
  mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge
  [ -s /etc/munge/munge.key ] || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  chown -R munge:munge /etc/munge /var/lib/munge /var/log/munge /run/munge 2>/dev/null
  chmod 0400 /etc/munge/munge.key; chmod 0700 /etc/munge
  # (the daemon does not inherit the lock)
  if id munge >/dev/null 2>&1; then su -s /bin/sh munge -c /usr/sbin/munged 2>"$D/log/munged.err" {lock}>&- || /usr/sbin/munged --force 2>>"$D/log/munged.err" {lock}>&-
  else /usr/sbin/munged --force 2>"$D/log/munged.err" {lock}>&-; fi
  # (a daemon's start has no progress to follow: 60 s, hundreds of times its usual tenth of a second)
  for _ in $(seq 600); do munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
  munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 || skip "munged did not start ($(tail -n 1 "$D/log/munged.err" 2>/dev/null))"
fi

# listening PORT: whether something on this machine listens on PORT (a connection is taken)
listening() { (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# the cluster: this machine as one node, or the hosts (names and addresses from HOSTS_DIR/hosts)
name=nstbatch-test ctl="$host(127.0.0.1)" pidfile=$D/slurmd.pid logfile=$D/log/slurmd.log
if [ -z "$HD" ]; then
  # two runs on one machine side by side (two checkouts, a suite run by hand beside make test):
  # each its own controller, on the first pair of ports free from 16817 (one run's sinfo and jobs
  # went to the other's controller, which went away with it), chosen under the lock, held until
  # this run's daemons listen (this script's end; the daemons do not inherit it)
  for port in $(seq 16817 10 17807) none; do ! listening "$port" && ! listening $((port + 1)) && break; done
  [ "$port" != none ] || skip "no free pair of ports for slurmctld and slurmd from 16817 to 17808"
fi
nodes="NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN" list=$host
if [ -n "$HD" ]; then
  exec {lock}>&-
  [ -s "$HD/hosts" ] || skip "no hosts in $HD"
  n=$(wc -l <"$HD/hosts") mem=$((mem / n))
  # (port: in the hosts' own network namespaces, where no other run's daemons are)
  name=nstbatch-hosts ctl="$(awk 'NR == 1 { print $1 "(" $3 ")" }' "$HD/hosts")" port=16917
  pidfile=$D/slurmd-%n.pid logfile=$D/log/slurmd-%n.log
  # two GPUs in name only per node (Slurm wants a device file for each: /dev/null and /dev/zero),
  # so that the GPU templates' --gpus-per-task is granted; the tests render on the CPU
  nodes=$(awk -v c="$cpus" -v m="$mem" '{ print "NodeName=" $1 " NodeAddr=" $3 " CPUs=" c " RealMemory=" m " Gres=gpu:2 State=UNKNOWN" }' "$HD/hosts")
  nodes="GresTypes=gpu
$nodes"
  printf 'Name=gpu File=/dev/null\nName=gpu File=/dev/zero\n' >"$D/gres.conf"
  list=$(awk '{ print $1 }' "$HD/hosts" | paste -sd,)
  for h in ${list//,/ }; do mkdir -p "$D/spool/slurmd-$h"; done
fi
# Two runs side by side (their own ports, above) number their jobs apart too: names outside Slurm
# are made from job and step numbers, and two jobs 4 ran into each other. Open MPI's shared-memory
# segments (/dev/shm/vader_segment.HOST.JOBID.RANK, JOBID from srun's PMIx namespace, slurm.pmix.4.1)
# were one job's and the other's: both jobs' ranks died of a segmentation fault in the vader BTL;
# srun --mpi=pmix's spmix_appdir_UID_4.1 in TmpFS, made and removed by each: "task launch failed".
# So each cluster's jobs start at their own number, and each node's TmpFS is a folder of its own.
first_job=$(((port - 16817) / 10 * 1000 + 1))
for h in ${list//,/ }; do mkdir -p "$D/tmp/$h"; done
cat >"$D/slurm.conf" <<CONF
# generated by tests/slurm/start_local.sh
ClusterName=$name
SlurmctldHost=$ctl
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/slurmd-%n
TmpFS=$D/tmp/%n
FirstJobId=$first_job
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$pidfile
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$logfile
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobRequeue=1
KillWait=30
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
Waittime=0
$nodes
PartitionName=test Nodes=$list Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
export SLURM_CONF=$D/slurm.conf
if [ -z "$HD" ]; then
  /usr/sbin/slurmctld -c -f "$SLURM_CONF" 2>"$D/log/slurmctld.err" {lock}>&- || skip "slurmctld failed: $(tail -n 2 "$D/log/slurmctld.err")"
  /usr/sbin/slurmd -c -f "$SLURM_CONF" 2>"$D/log/slurmd.err" {lock}>&- || skip "slurmd failed: $(tail -n 2 "$D/log/slurmd.err")"
  on_head=()
else # slurmctld on the first host, a slurmd in every host
  on_head=("$HOSTS" exec "$HD" "${list%%,*}")
  "${on_head[@]}" /usr/sbin/slurmctld -c -f "$SLURM_CONF" 2>"$D/log/slurmctld.err" || skip "slurmctld failed: $(tail -n 2 "$D/log/slurmctld.err")"
  for h in ${list//,/ }; do
    "$HOSTS" exec "$HD" "$h" /usr/sbin/slurmd -c -N "$h" -f "$SLURM_CONF" 2>"$D/log/slurmd-$h.err" || skip "slurmd on $h failed: $(tail -n 2 "$D/log/slurmd-$h.err")"
  done
fi
want=$(tr -cd , <<<"$list" | wc -c) want=$((want + 1))
# (the daemons' start has no progress to follow: 120 s, many times the second or two it takes)
for _ in $(seq 600); do
  st=$("${on_head[@]}" sinfo -h -N -o %t 2>/dev/null | grep -cE '^(idle|mix|alloc)')
  [ "${st:-0}" -ge "$want" ] && { echo "export SLURM_CONF=$SLURM_CONF"; exit 0; }
  sleep 0.2
done
skip "the nodes did not come up (sinfo: $("${on_head[@]}" sinfo -h -N -o '%N %t' 2>/dev/null | tr '\n' ' '); $(tail -n 1 "$D"/log/slurmd*.log 2>/dev/null | tail -n 1))"
