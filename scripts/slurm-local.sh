#!/usr/bin/env bash
# A single-node SLURM cluster on this machine (Debian's slurm-wlm and munge: slurmctld + slurmd
# on localhost), for the sweep's job-array test (issue 17). Needs root.
#   scripts/slurm-local.sh start   # configure and start munged, slurmctld, slurmd; wait until the node is idle
#   scripts/slurm-local.sh stop
set -euo pipefail
cmd=${1:-start}
host=$(hostname -s)
conf=/etc/slurm/slurm.conf

stop() {
  for p in slurmd slurmctld; do
    [ -f /run/$p.pid ] && kill "$(cat /run/$p.pid)" 2>/dev/null || true
  done
}

if [ "$cmd" = stop ]; then stop; exit 0; fi
[ "$(id -u)" = 0 ] || { echo "slurm-local.sh: needs root" >&2; exit 1; }
command -v slurmctld >/dev/null || { echo "slurm-local.sh: slurm-wlm is not installed" >&2; exit 1; }

# munge: a key and the daemon, running as its own user.
install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
install -d -o munge -g munge -m 0755 /run/munge
if [ ! -s /etc/munge/munge.key ]; then
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  chown munge:munge /etc/munge/munge.key
  chmod 0400 /etc/munge/munge.key
fi
if ! munge -n >/dev/null 2>&1; then
  runuser -u munge -- /usr/sbin/munged
  for _ in $(seq 50); do munge -n >/dev/null 2>&1 && break; sleep 0.1; done
fi

mem_mb=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
cpus=$(nproc)
install -d /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
cat > "$conf" <<CONF
# Written by jouleprof scripts/slurm-local.sh: one node, no accounting, no cgroups.
ClusterName=jouleprof-local
SlurmctldHost=$host
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$host CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF

stop
sleep 0.5
slurmctld -c
slurmd
for _ in $(seq 100); do
  state=$(sinfo -h -N -o %t 2>/dev/null | head -1 || true)
  case "$state" in idle*|mix*|alloc*) echo "slurm-local.sh: node $host is $state"; exit 0 ;; esac
  sleep 0.2
done
echo "slurm-local.sh: the node did not come up (state '${state:-none}'); see /var/log/slurm/" >&2
tail -5 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
exit 1
