#!/usr/bin/env bash
# Single-node Slurm (Debian slurm-wlm + munge) for the acceptance suite's Slurm tests.
#
# Installs the packages, writes a minimal slurm.conf for this host, starts munged, slurmctld and slurmd,
# and waits until `sinfo` shows the node idle. Idempotent (a second run finds Slurm up and exits 0), never
# hangs (every step has a timeout) and exits non-zero with a message when something fails.
# Pattern: acceptance.md section 5 ("real single-node Slurm in CI"), tried there with slurm-wlm 22.05.
set -uo pipefail

log() { echo "slurm-setup: $*"; }
die() { echo "slurm-setup: FAILED: $*" >&2; exit 1; }

node_idle() {
  timeout 10 sinfo -h -N -o '%t' 2>/dev/null | grep -qE '^(idle|mix|alloc)'
}

if command -v sinfo >/dev/null 2>&1 && node_idle; then
  log "Slurm already up: $(timeout 10 sinfo -h -N -o '%N %t')"
  exit 0
fi

[ "$(id -u)" = 0 ] || die "needs root (apt-get, daemons); run as root or skip the Slurm tests"

if ! command -v slurmctld >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 || die "apt-get not found: only Debian/Ubuntu hosts are supported"
  log "installing slurm-wlm and munge (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  timeout 300 apt-get update -qq >/dev/null || die "apt-get update failed or timed out"
  timeout 600 apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null \
    || die "apt-get install slurm-wlm munge failed or timed out"
fi

# fio for the storage checks' fio path (best effort: without it they measure with Python I/O).
if ! command -v fio >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq --no-install-recommends fio >/dev/null 2>&1 \
    || log "fio not installed (optional)"
fi

host=$(hostname -s)
cpus=$(nproc --all)
mem_mib=$(awk '/^MemTotal:/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
conf_dir=/etc/slurm
[ -d /etc/slurm-llnl ] && [ ! -d /etc/slurm ] && conf_dir=/etc/slurm-llnl
mkdir -p "$conf_dir" /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge /var/lib/munge /var/log/munge
chown -R slurm:slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm 2>/dev/null || true

cat >"$conf_dir/slurm.conf" <<EOF
# Written by trainsizer .ci/slurm-setup.sh: one node, this host, for tests.
ClusterName=trainsizer-ci
SlurmctldHost=$host(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SchedulerType=sched/backfill
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=10
Waittime=0
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mib State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
# proctrack/linuxproc + task/none need no cgroup.conf (22.05 rejects CgroupPlugin=disabled).

# munge: a key, then the daemon.
if [ ! -s /etc/munge/munge.key ]; then
  log "creating munge key"
  if command -v mungekey >/dev/null 2>&1; then
    timeout 30 mungekey --create --force >/dev/null 2>&1 || die "mungekey failed"
  else
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none || die "cannot write munge key"
  fi
fi
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
chmod 0400 /etc/munge/munge.key
if ! timeout 10 munge -n 2>/dev/null | timeout 10 unmunge >/dev/null 2>&1; then
  log "starting munged"
  if command -v runuser >/dev/null 2>&1; then
    timeout 20 runuser -u munge -- munged --force || die "munged did not start"
  else
    timeout 20 munged --force || die "munged did not start"
  fi
  sleep 1
  timeout 10 munge -n 2>/dev/null | timeout 10 unmunge >/dev/null 2>&1 || die "munge round trip failed"
fi

# slurmctld and slurmd: (re)start so that the written slurm.conf is the one in use.
stop_pidfile() {
  local f=$1
  if [ -s "$f" ]; then
    local pid
    pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    fi
  fi
}
stop_pidfile /run/slurmd.pid
stop_pidfile /run/slurmctld.pid

log "starting slurmctld and slurmd on $host (CPUs=$cpus RealMemory=${mem_mib}MiB)"
timeout 30 slurmctld -c || die "slurmctld did not start (see /var/log/slurm/slurmctld.log)"
sleep 2
timeout 30 slurmd -c || die "slurmd did not start (see /var/log/slurm/slurmd.log)"

for _ in $(seq 1 60); do
  if node_idle; then
    log "Slurm up: $(timeout 10 sinfo -h -N -o '%N %t %c CPUs')"
    exit 0
  fi
  state=$(timeout 10 sinfo -h -N -o '%t' 2>/dev/null | head -n 1)
  case "$state" in
    down*|drain*|unk*) timeout 10 scontrol update NodeName="$host" State=RESUME >/dev/null 2>&1 || true ;;
  esac
  sleep 1
done
die "node did not become idle within 60 s (sinfo: $(timeout 10 sinfo -h -N 2>&1 | head -n 2))"
