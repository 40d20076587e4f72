#!/usr/bin/env python3
"""`gradwire sweep --emit-slurm` run by a real Slurm: Debian's munged, slurmctld and slurmd,
started here as a private single-node cluster, run the emitted array job, and its results.csv
must equal the one a local `gradwire sweep -j 2` writes.

Usage: slurm_sweep_test.py GRADWIRE_BINARY

The cluster is entirely this test's: a fresh munge key and socket, a generated slurm.conf
(exported as SLURM_CONF) on two free ports, and state, spool, pid and log files in a temporary
folder, so it neither needs nor disturbs a system-wide munge or Slurm. The daemons run in the
foreground as children of this process; they are stopped (SIGTERM, then SIGKILL) however the
test ends, and the kernel stops them (parent-death signal) if the test itself is killed. The job
steps slurmd starts are adopted by this process, so ctest's timeout, which kills the test's
process tree, ends them too. The internal time limits add up to less than ctest's, so the
clean-up normally runs first. The folder is removed when the test passes and kept (its path
printed) when it fails; GRADWIRE_KEEP_SLURM_TEST=1 keeps it either way.

Checks: the node comes up idle; sbatch accepts sweep.slurm and every array task completes with
exit code 0 (scontrol); every run has summary.json; results.csv equals the local sweep's cell
for cell, wall-clock columns and replayed_from aside, rows in the same order, every status "ok".

Exit 77 (ctest: skipped), with the reason, when not run as root (slurmd runs jobs as their
submitter and this cluster's SlurmUser is root), when munge or Slurm is not installed
(scripts/install-deps installs them), or when a daemon does not start or the node does not come
up (the daemon's log tail is printed).
"""
import csv
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SWEEP = {
    "gradwire_sweep": 1,
    "name": "slurm",
    "base": {
        "gradwire": 1, "name": "slurm",
        "model": {"kind": "mlp", "hidden": [16]},
        "dataset": {"kind": "synthetic", "train_samples": 800, "test_samples": 200},
        "training": {"workers": 2, "steps": 12, "batch": 8, "eval_every": 4,
                     "target_accuracy": 0.3},
        # One LibTorch thread everywhere: a local -j 2 run and a Slurm task would otherwise get
        # different thread counts (cores / jobs), and with them different float sums.
        "compute": {"mode": "fixed", "seconds": 0.001, "threads": 1},
        "network": {"family": "ethernet"},
    },
    "grid": {"codec": [{"kind": "none"}, {"kind": "topk", "ratio": 0.1}],
             "network.rate": ["100Mbps", "1Gbps"]},
}
RUNS = 4
# Wall-clock seconds differ from one execution to the next; replayed_from says how a run was
# made: the Slurm tasks train every run, the local sweep replays the runs that differ from
# another only in their network (their simulated columns must still be equal).
WALL_COLUMNS = {"wall_time_s", "ns3_wall_time_s", "replayed_from"}
TOOLS = ["munged", "slurmctld", "slurmd", "sbatch", "sinfo", "scontrol", "squeue", "scancel"]
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
         "BOOT_FAIL", "DEADLINE", "PREEMPTED"}
NODE_UP_S = 30
JOB_S = 180
LOCAL_S = 120


class Skip(Exception):
    pass


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def become_subreaper():
    """slurmd starts each job's slurmstepd detached (double fork). As a subreaper, this process
    adopts them instead of init: clean-up finds them as its children, and ctest's timeout, which
    kills the test's whole process tree, kills them and their jobs too."""
    PR_SET_CHILD_SUBREAPER = 36
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1)


def adopted_children(known):
    """Pids whose parent is this process, other than the `known` ones it started."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == os.getpid() and int(entry) not in known:
            pids.append(int(entry))
    return pids


def die_with_parent():
    """Runs in a daemon before exec: the kernel sends it SIGTERM when this test process ends,
    so no daemon outlives a test killed by ctest's timeout."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def find_tools():
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    found = {t: shutil.which(t, path=path) for t in TOOLS}
    missing = [t for t, p in found.items() if not p]
    if missing:
        raise Skip(f"{', '.join(missing)} not installed (Debian: munge slurmctld slurmd "
                   "slurm-client; scripts/install-deps installs them)")
    return found


def free_ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def tail(path, lines=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as e:
        return f"({path}: {e})"


class Cluster:
    """munged, slurmctld and slurmd in `root`, on their own socket and ports."""

    def __init__(self, root, tools):
        self.root, self.tools, self.procs = root, tools, []
        self.host = socket.gethostname().split(".")[0]
        self.socket = os.path.join(root, "munge", "munge.socket")
        self.conf = os.path.join(root, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        # A sbatch option in the caller's environment (SBATCH_PARTITION, ...) must not leak in.
        for key in list(self.env):
            if key.startswith(("SBATCH_", "SLURM_")) and key != "SLURM_CONF":
                del self.env[key]

    def log(self, name):
        return os.path.join(self.root, "log", name + ".log")

    def start_daemon(self, name, args):
        out = open(os.path.join(self.root, "log", name + ".out"), "w")
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
        out.close()
        self.procs.append((name, proc))
        return proc

    def start_munge(self):
        for sub in ("munge", "log", "state", "spool"):
            os.makedirs(os.path.join(self.root, sub), mode=0o700)
        key = os.path.join(self.root, "munge", "munge.key")
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
        os.write(fd, os.urandom(1024))
        os.close(fd)
        # --force: munged refuses to run as root (it expects a "munge" user), and this cluster's
        # daemons all run as root; the key, socket and files are in a folder only root can read.
        self.start_daemon("munged", [
            self.tools["munged"], "--foreground", "--force", f"--socket={self.socket}",
            f"--key-file={key}", f"--pid-file={os.path.join(self.root, 'munge', 'munged.pid')}",
            f"--log-file={self.log('munged')}",
            f"--seed-file={os.path.join(self.root, 'munge', 'munged.seed')}"])
        self.wait_for("munged", lambda: os.path.exists(self.socket), 10, self.log("munged"))

    def write_conf(self):
        ctld_port, slurmd_port = free_ports(2)
        # Two CPUs per task (sweep.slurm's --cpus-per-task=2) for every task at once, so the
        # tasks end together and their results.csv updates contend; config_overrides lets the
        # node claim more CPUs than the machine has instead of being drained for it.
        cpus = 2 * RUNS
        r = self.root
        conf = f"""\
ClusterName=gradwiretest
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.socket}
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd.pid
SlurmctldLogFile={self.log('slurmctld')}
SlurmdLogFile={self.log('slurmd')}
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SlurmdParameters=config_overrides
NodeName={self.host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
        with open(self.conf, "w") as f:
            f.write(conf)

    def start_slurm(self):
        self.write_conf()
        # -i: ignore state from a previous start (there is none; it also skips the warning).
        self.start_daemon("slurmctld", [self.tools["slurmctld"], "-D", "-i", "-f", self.conf])
        self.wait_for("slurmctld", lambda: self.quiet_ok([self.tools["scontrol"], "ping"],
                                                         "UP"), NODE_UP_S,
                      self.log("slurmctld"))
        self.start_daemon("slurmd", [self.tools["slurmd"], "-D", "-N", self.host, "-f",
                                     self.conf])
        self.wait_for("slurmd", self.node_idle, NODE_UP_S, self.log("slurmd"))

    def quiet_ok(self, args, needle):
        try:
            out = subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=10)
        except subprocess.TimeoutExpired:
            return False
        return out.returncode == 0 and needle in out.stdout

    def node_idle(self):
        try:
            out = subprocess.run([self.tools["sinfo"], "-h", "-N", "-o", "%T"], env=self.env,
                                 capture_output=True, text=True, timeout=10)
        except subprocess.TimeoutExpired:
            return False
        return out.returncode == 0 and out.stdout.strip() == "idle"

    def wait_for(self, name, ready, seconds, log):
        proc = dict(self.procs)[name]
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise Skip(f"{name} exited ({proc.returncode}) at start; its log:\n{tail(log)}"
                           f"\nits output:\n{tail(os.path.join(self.root, 'log', name + '.out'))}")
            if ready():
                return
            time.sleep(0.2)
        state = ""
        if name == "slurmd":  # a drained node says why
            state = "; sinfo: " + self.run([self.tools["sinfo"], "-h", "-N", "-o", "%T %E"],
                                           10).stdout.strip()
        raise Skip(f"{name} not ready within {seconds} s{state}; its log:\n{tail(log)}")

    def wait_for_array(self, job_id, count, seconds):
        """The array's tasks (scontrol's fields) once all `count` have ended; None on timeout."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            out = self.run([self.tools["scontrol"], "-o", "show", "job", job_id], 10)
            tasks = [dict(f.split("=", 1) for f in line.split() if "=" in f)
                     for line in out.stdout.splitlines()]
            if (len(tasks) == count
                    and all(t.get("ArrayTaskId", "").isdigit() for t in tasks)
                    and all(t.get("JobState") in ENDED for t in tasks)):
                return tasks
            time.sleep(0.5)
        return None

    def run(self, args, timeout):
        return subprocess.run(args, env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def stop(self):
        """Cancels what is still queued (so no job step outlives the cluster), then stops the
        daemons in reverse order of start."""
        if any(name == "slurmd" and p.poll() is None for name, p in self.procs):
            try:
                self.run([self.tools["scancel"], "--full", "--user=root"], 10)
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    q = self.run([self.tools["squeue"], "-h"], 10)
                    if q.returncode != 0 or not q.stdout.strip():
                        break
                    time.sleep(0.5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        for name, proc in reversed(self.procs):
            if proc.poll() is not None:
                continue
            for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
                proc.send_signal(sig)
                try:
                    proc.wait(wait_s)
                    break
                except subprocess.TimeoutExpired:
                    continue
        # A job step whose slurmd is gone retries its completion message for many minutes and
        # ignores SIGTERM; such steps were adopted here (become_subreaper), as were the ones
        # that ended, which are reaped here.
        for pid in adopted_children({p.pid for _, p in self.procs}):
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        self.procs = []


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def without_wall_columns(rows):
    keep = [i for i, c in enumerate(rows[0]) if c not in WALL_COLUMNS]
    return [[row[i] for i in keep] for row in rows]


def run_test(gradwire, root, tools):
    sweep_file = os.path.join(root, "sweep.json")
    with open(sweep_file, "w") as f:
        json.dump(SWEEP, f, indent=2)

    cluster = Cluster(os.path.join(root, "cluster"), tools)
    os.makedirs(cluster.root, mode=0o700)
    try:
        cluster.start_munge()
        cluster.start_slurm()
        print(f"slurm: node {cluster.host} idle", file=sys.stderr)

        emitted = os.path.join(root, "slurm-out")
        out = cluster.run([gradwire, "sweep", sweep_file, "--emit-slurm", "--out", emitted], 60)
        check(out.returncode == 0, f"--emit-slurm failed ({out.returncode}):\n{out.stderr}")
        folder = os.path.join(emitted, SWEEP["name"])
        script = os.path.join(folder, "sweep.slurm")
        check(os.path.exists(script), "no sweep.slurm")

        # Submitted from elsewhere, as a user would: the script must not rely on its cwd.
        started = time.monotonic()
        sub = cluster.run([tools["sbatch"], "--parsable", script], 30)
        check(sub.returncode == 0, f"sbatch refused sweep.slurm ({sub.returncode}): {sub.stderr}")
        job_id = sub.stdout.strip().split(";")[0]
        # Polled rather than sbatch --wait, whose back-off sleeps up to 30 s past the job's end.
        tasks = cluster.wait_for_array(job_id, RUNS, JOB_S)
        print(f"slurm: array job {job_id} ended after {time.monotonic() - started:.0f} s",
              file=sys.stderr)
        logs = "\n".join(f"--- {n}\n{tail(os.path.join(folder, 'logs', n), 15)}"
                         for n in sorted(os.listdir(os.path.join(folder, "logs"))))
        check(tasks is not None, f"array job {job_id} not done within {JOB_S} s:\n"
              + cluster.run([tools["scontrol"], "-o", "show", "job", job_id], 10).stdout
              + logs + tail(cluster.log("slurmctld")))
        for task in tasks:
            check(task.get("JobState") == "COMPLETED" and task.get("ExitCode") == "0:0",
                  f"array task {task.get('ArrayTaskId')}: {task.get('JobState')}, exit "
                  f"{task.get('ExitCode')}\n{logs}")

        local = os.path.join(root, "local-out")
        out = subprocess.run([gradwire, "sweep", sweep_file, "-j", "2", "--out", local, "-q"],
                             capture_output=True, text=True, timeout=LOCAL_S)
        check(out.returncode == 0, f"local sweep failed ({out.returncode}):\n{out.stderr}")
    finally:
        cluster.stop()

    slurm_rows = read_csv(os.path.join(folder, "results.csv"))
    local_rows = read_csv(os.path.join(local, SWEEP["name"], "results.csv"))
    check(len(local_rows) == RUNS + 1, f"local results.csv has {len(local_rows)} lines")
    for row in slurm_rows[1:]:
        check(os.path.exists(os.path.join(folder, row[0], "summary.json")),
              f"{row[0]}: no summary.json from its Slurm task")
    status = slurm_rows[0].index("status")
    check(all(row[status] == "ok" for row in slurm_rows[1:]),
          "Slurm results.csv statuses: " + ", ".join(r[status] for r in slurm_rows[1:]))
    a, b = without_wall_columns(slurm_rows), without_wall_columns(local_rows)
    check(a[0] == b[0], f"columns differ:\n{a[0]}\n{b[0]}")
    for ra, rb in zip(a[1:], b[1:]):
        check(ra == rb, "a row differs (wall-clock columns aside):\n"
              + "\n".join(f"  {c}: slurm {x!r}, local {y!r}" for c, x, y in zip(a[0], ra, rb)
                          if x != y))
    check(len(a) == len(b), f"{len(a) - 1} Slurm rows, {len(b) - 1} local rows")
    print(f"slurm: results.csv equals the local sweep's ({RUNS} runs, "
          f"{len(a[0])} columns compared)", file=sys.stderr)


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    gradwire = os.path.abspath(argv[1])
    # On SIGTERM the clean-up below still runs.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    root = None
    passed = False
    become_subreaper()
    try:
        if os.geteuid() != 0:
            raise Skip("needs root: this private cluster runs slurmd and the jobs as root")
        tools = find_tools()
        root = tempfile.mkdtemp(prefix="gradwire-slurm-")
        os.chmod(root, 0o700)  # munged refuses a key or socket in a folder others may write
        run_test(gradwire, root, tools)
        passed = True
        return 0
    except Skip as e:
        print(f"skipped: {e}", file=sys.stderr)
        passed = True  # nothing of interest to keep
        return 77
    except Failure as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        if root:
            if passed and os.environ.get("GRADWIRE_KEEP_SLURM_TEST") != "1":
                shutil.rmtree(root, ignore_errors=True)
            else:
                print(f"kept {root}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
