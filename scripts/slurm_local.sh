#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the tests that run real jobs (as root).
#
#   scripts/slurm_local.sh start   install slurm-wlm + munge if missing, start munged,
#                                  slurmctld and slurmd, wait until the node is idle
#   scripts/slurm_local.sh stop    stop the daemons this script started
#   scripts/slurm_local.sh env     print the SLURM_CONF line for the shell
#
# Everything lives in $GPUOPT_SLURM_DIR (default /tmp/gpuopt-slurm): slurm.conf, spool,
# state, pid and log files. The tests read $GPUOPT_SLURM_DIR/slurm.conf; where the start
# failed, $GPUOPT_SLURM_DIR/unavailable holds the one line saying why, and they skip with it.
set -uo pipefail
DIR="${GPUOPT_SLURM_DIR:-/tmp/gpuopt-slurm}"
CTLD_PORT="${GPUOPT_SLURMCTLD_PORT:-6817}"
SLURMD_PORT="${GPUOPT_SLURMD_PORT:-6818}"
export SLURM_CONF="$DIR/slurm.conf"

fail() {
    mkdir -p "$DIR"
    echo "$*" >"$DIR/unavailable"
    echo "slurm_local: $*" >&2
    exit 1
}

install() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null &&
        return 0
    command -v apt-get >/dev/null || fail "slurm-wlm is not installed and there is no apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q slurm-wlm munge >"$DIR/apt.log" 2>&1 ||
        { apt-get update -q >>"$DIR/apt.log" 2>&1 &&
            apt-get install -y -q slurm-wlm munge >>"$DIR/apt.log" 2>&1; } ||
        fail "apt-get install slurm-wlm munge failed: $(tail -n 1 "$DIR/apt.log")"
}

write_conf() {
    local node cpus mem
    node="$(hostname -s)"
    cpus="$(nproc)"
    mem="$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)"
    mkdir -p "$DIR/spool/ctld" "$DIR/spool/d" "$DIR/state" "$DIR/log"
    cat >"$SLURM_CONF" <<EOF
ClusterName=gpuopt-local
SlurmctldHost=$node
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/d
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MinJobAge=600
KillWait=10
SchedulerParameters=sched_interval=1
NodeName=$node CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
}

start_munge() {
    [ -s /etc/munge/munge.key ] || mungekey -c >/dev/null 2>&1 || fail "mungekey -c failed"
    chown munge:munge /etc/munge/munge.key 2>/dev/null
    chmod 400 /etc/munge/munge.key
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    if ! munge -n >/dev/null 2>&1; then
        runuser -u munge -- /usr/sbin/munged >"$DIR/log/munged.out" 2>&1 ||
            fail "munged did not start: $(tail -n 1 "$DIR/log/munged.out")"
        for _ in $(seq 50); do munge -n >/dev/null 2>&1 && break; sleep 0.1; done
        munge -n >/dev/null 2>&1 || fail "munged started but munge -n fails"
        echo started >"$DIR/munged.ours"
    fi
}

start() {
    mkdir -p "$DIR"
    rm -f "$DIR/unavailable"
    [ "$(id -u)" = 0 ] || fail "needs root (SlurmUser=root); running as $(id -un)"
    install
    if [ -s "$SLURM_CONF" ] && scontrol ping 2>/dev/null | grep -q UP; then
        echo "slurm_local: already up (SLURM_CONF=$SLURM_CONF); left as it is"
        return 0
    fi
    write_conf
    start_munge
    echo started >"$DIR/daemons.ours"
    slurmctld -f "$SLURM_CONF" >"$DIR/log/slurmctld.out" 2>&1 ||
        fail "slurmctld did not start: $(tail -n 1 "$DIR/log/slurmctld.out") $(tail -n 1 "$DIR/log/slurmctld.log" 2>/dev/null)"
    slurmd -f "$SLURM_CONF" >"$DIR/log/slurmd.out" 2>&1 ||
        fail "slurmd did not start: $(tail -n 1 "$DIR/log/slurmd.out") $(tail -n 1 "$DIR/log/slurmd.log" 2>/dev/null)"
    local state=""
    for _ in $(seq 300); do
        state="$(sinfo -h -o %T 2>/dev/null | head -n 1)"
        case "$state" in idle | mixed | allocated) break ;; esac
        sleep 0.2
    done
    case "$state" in
    idle | mixed | allocated) echo "slurm_local: one-node cluster up ($(hostname -s), $state); SLURM_CONF=$SLURM_CONF" ;;
    *) fail "the node did not come up (sinfo says '${state:-nothing}'): $(tail -n 1 "$DIR/log/slurmctld.log" 2>/dev/null)" ;;
    esac
}

stop_pid() {
    local file="$1" pid
    [ -s "$file" ] || return 0
    pid="$(cat "$file")"
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
}

stop() {
    [ -e "$DIR/daemons.ours" ] || return 0 # not started by this script: not ours to stop
    stop_pid "$DIR/slurmd.pid"
    stop_pid "$DIR/slurmctld.pid"
    rm -f "$DIR/daemons.ours"
    if [ -e "$DIR/munged.ours" ] && [ -s /run/munge/munged.pid ]; then
        stop_pid /run/munge/munged.pid
        rm -f "$DIR/munged.ours"
    fi
}

case "${1:-}" in
start) start ;;
stop) stop ;;
env) echo "export SLURM_CONF=$SLURM_CONF" ;;
*) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
