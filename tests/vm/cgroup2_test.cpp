// The limits on a real cgroup v2 kernel: this project's hosts are cgroup v1
// hybrids, so the v2 path runs here in a microVM whose init mounts cgroup2
// on /sys/fs/cgroup (the kernel booted with cgroup_no_v1=all), enables the
// memory, pids and cpu controllers under an outer cgroup (pids.max and
// memory.max: a bug fails a check, never the VM), and delegates a subtree
// to an unprivileged user as systemd's Delegate=yes does (the directory,
// cgroup.procs, cgroup.subtree_control and cgroup.threads owned by it).
// The user's shell starts inside that subtree, as a systemd user's does.
//
// Each case runs as root and as that user, with nsrun exec'd as the only
// process of a fresh cgroup (what `systemd-run --scope -p Delegate=yes`
// makes): a memory hog ends with the OOM verdict and memory.peak; a fork
// bomb stays within pids.max; a busy loop under --limit-cpu gets its share;
// --timeout ends a double-forked daemon that ignores SIGTERM and a fork
// bomb within the kill-after grace; PID 1 starts in the sandbox's cgroup
// (clone3 CLONE_INTO_CGROUP); no sandbox cgroup and no process is left.
// Then: no delegated subtree (refused, or the stated best-effort fallback),
// a shell sharing the cgroup (refused, naming the way out), $NSRUN_CGROUP,
// and the `limits` bench row against workspace-write, paired.
//
// One boot covers both users inside the guest, so the test boots only when
// the suite runs as root (the run as the unprivileged host user would boot
// the same guest again).
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include "vm_support.hpp"

using namespace nsrun_test;

namespace {

// After vm::make_image_root's preamble (busybox, proc, sysfs, devtmpfs).
constexpr std::string_view init_script = R"INIT(mount -t cgroup2 cgroup2 /sys/fs/cgroup
chmod 1777 /tmp
echo "V: cgroup2 $(grep -c "^cgroup2 /sys/fs/cgroup cgroup2 " /proc/mounts) mounted, controllers $(cat /sys/fs/cgroup/cgroup.controllers)"
C="+memory +pids +cpu"
echo "$C" > /sys/fs/cgroup/cgroup.subtree_control
T=/sys/fs/cgroup/vmtest
mkdir $T; echo 2000 > $T/pids.max; echo 700M > $T/memory.max; echo "$C" > $T/cgroup.subtree_control
mkdir $T/root $T/user $T/plain; echo "$C" > $T/root/cgroup.subtree_control
chown 1000:1000 $T/user $T/user/cgroup.procs $T/user/cgroup.subtree_control $T/user/cgroup.threads
echo "$C" > $T/user/cgroup.subtree_control
mkdir $T/user/login
mkdir -p /work/root /work/user /home/user; chown 1000:1000 /work/user /home/user
now() { cut -d' ' -f1 /proc/uptime; }
# as WHO NAME CMD: the sh command line CMD as WHO, exec'd as the only
# process of a new cgroup NAME of WHO's subtree.
as() {
  line="mkdir $T/$1/$2 && echo \$\$ > $T/$1/$2/cgroup.procs && cd /work/$1 && exec $3"
  if [ "$1" = root ]; then sh -c "$line"
  else sh -c 'echo $$ > '$T/user/login/cgroup.procs' && exec su user -s /bin/sh -c "$0"' "$line"; fi
}
for w in root user; do
  R=/work/$w
  as $w hog "nsrun --report $R/hog.json --limit-memory 64M -- dd if=/dev/zero of=/dev/null bs=200M count=1"
  echo "V: $w hog exit $? report $(cat $R/hog.json)"
  t0=$(now)
  as $w bomb "nsrun --report $R/bomb.json --limit-pids 30 --timeout 3s --kill-after 1s -- sh -c 'trap \"\" TERM; b(){ b|b & }; b; sleep 600'" 2>/dev/null
  echo "V: $w bomb exit $? seconds $t0 $(now) pids.peak $(cat $T/$w/bomb/pids.peak) report $(cat $R/bomb.json)"
  as $w cpu "nsrun --report $R/cpu.json --limit-cpu 0.2 -- sh -c 'i=0; while [ \$i -lt 6000 ]; do i=\$((i+1)); done'"
  echo "V: $w cpu exit $? report $(cat $R/cpu.json)"
  t0=$(now)
  as $w daemon "nsrun --timeout 2s --kill-after 1s -- sh -c '(setsid sh -c \"trap \\\"\\\" TERM; exec sleep 601\" &); trap \"\" TERM; sleep 602'" 2>/dev/null
  echo "V: $w daemon exit $? seconds $t0 $(now) left $(ps -o pid,args | grep -c '[s]leep 60[12]')"
  rm -f $R/ready $R/go; mkfifo $R/go; [ $w = user ] && chown user $R/go
  as $w into "nsrun --limit-pids 10 -- sh -c 'cat /proc/self/cgroup > ready.tmp; mv ready.tmp ready; read x < go'" &
  i=0; while [ ! -s $R/ready ] && [ $i -lt 6000 ]; do i=$((i+1)); usleep 10000; done
  echo "V: $w into inside [$(cat $R/ready)] supervisor [$(cat $T/$w/into/nsrun-supervisor/cgroup.procs | tr '\n' ' ')] sandbox [$(cat $T/$w/into/nsrun-[0-9]*/cgroup.procs | tr '\n' ' ')] scope [$(cat $T/$w/into/cgroup.procs)]"
  echo go > $R/go; wait
  as $w ll-hog "nsrun --backend landlock --report $R/ll-hog.json --limit-memory 64M -- dd if=/dev/zero of=/dev/null bs=200M count=1"
  echo "V: $w landlock hog exit $? report $(cat $R/ll-hog.json)"
  as $w ll-bomb "nsrun --backend landlock --report $R/ll-bomb.json --limit-pids 20 -- sh -c 'b(){ if [ \$1 -gt 0 ]; then b \$((\$1-1)) & b \$((\$1-1)) & fi; sleep 1; wait; }; b 6'" 2>/dev/null
  echo "V: $w landlock bomb exit $? pids.peak $(cat $T/$w/ll-bomb/pids.peak) report $(cat $R/ll-bomb.json)"
done
sh -c "echo \$\$ > $T/plain/cgroup.procs; exec su user -s /bin/sh -c 'cd /work/user; exec nsrun --limit-memory 64M -- true'" 2>/work/plain.err
echo "V: plain strict exit $? [$(cat /work/plain.err)]"
sh -c "echo \$\$ > $T/plain/cgroup.procs; exec su user -s /bin/sh -c 'cd /work/user; exec nsrun --limits best-effort --report /work/user/plain.json --limit-memory 64M -- true'" 2>/work/plain.err
echo "V: plain best-effort exit $? [$(cat /work/plain.err)] report $(cat /work/user/plain.json)"
as user shared "sh -c 'nsrun --limit-memory 64M -- true 2>shared.err; echo \"V: shared exit \$? [\$(cat shared.err)]\"'"
as user conf "sh -c 'mkdir $T/user/sandboxes && NSRUN_CGROUP=$T/user/sandboxes nsrun --report conf.json --limit-memory 64M -- true; echo \"V: configured exit \$? left [\$(find $T/user/sandboxes -mindepth 1 -type d)] report \$(cat conf.json)\"'"
echo "V: left sandboxes [$(find $T -type d -name 'nsrun-[0-9]*')] processes $(ps -o pid,args | grep -c '[s]leep 60')"
for d in $(find $T -type d -name 'nsrun-*'); do echo "V: leaf $d procs [$(cat $d/cgroup.procs)]"; done
echo "V: bench start"
mkdir $T/root/bench-sandboxes
as root bench "env NSRUN_CGROUP=$T/root/bench-sandboxes nsrun bench -n 40 --warmup 4 --rows workspace-write,limits --baseline 'nsrun workspace-write'"
echo "V: bench exit $?"
echo "V: done"
poweroff -f
)INIT";

// The value after `"key":` in a report, up to the next comma or brace.
std::string json_value(const std::string& text, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const auto at = text.find(k);
  if (at == std::string::npos) return "";
  const auto from = at + k.size();
  return text.substr(from, text.find_first_of(",}", from) - from);
}

double number(const std::string& s) { return s.empty() ? -1 : std::strtod(s.c_str(), nullptr); }

// The console line starting with `prefix`.
std::string line(const std::string& out, const std::string& prefix) {
  const auto at = out.find(prefix);
  if (at == std::string::npos) return "";
  return out.substr(at, out.find('\n', at) - at);
}

// "seconds T0 T1" of a line: T1 - T0.
double elapsed(const std::string& l) {
  const auto at = l.find(" seconds ");
  if (at == std::string::npos) return -1;
  char* end = nullptr;
  const double t0 = std::strtod(l.c_str() + at + 9, &end);
  return std::strtod(end, nullptr) - t0;
}

}  // namespace

TEST_CASE("cgroup v2 limits on a real kernel, as root and as a delegated user", "[vm][cgroup2]") {
  if (::geteuid() != 0)
    SKIP("the guest runs every case as root and as an unprivileged user: booted once, by the suite's run as root");
  const vm::Tools t = vm::tools();
  TempDir dir("vm-cgroup2");
  const std::string root = dir / "root";
  vm::make_image_root(t, root, init_script);
  write_file(root + "/etc/passwd", "root:x:0:0:root:/:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\n", 0644);
  write_file(root + "/etc/group", "root:x:0:\nuser:x:1000:\n", 0644);
  const RunResult booted =
      vm::boot(t, vm::pack(t, root), "V: cgroup2", {.append = " cgroup_no_v1=all", .memory_mib = 1024, .limit = 480s});
  const std::string& out = booted.out;
  INFO("console:\n" << out << booted.err);
  REQUIRE(out.find("V: done") != std::string::npos);
  CHECK(line(out, "V: cgroup2").find("cgroup2 1 mounted") != std::string::npos);

  for (const std::string w : {"root", "user"}) {
    INFO("as " << w);
    // The hog: the OOM killer at memory.max, told as such, with memory.peak.
    const std::string hog = line(out, "V: " + w + " hog");
    CHECK(hog.find(" exit 137 ") != std::string::npos);
    CHECK(json_value(hog, "how") == "\"oom\"");
    CHECK(json_value(hog, "memory") == "\"cgroup\"");
    CHECK(json_value(hog, "peak_memory_source") == "\"memory.peak\"");
    const double peak = number(json_value(hog, "peak_memory_bytes"));
    CHECK(peak > 32.0 * (1 << 20));
    CHECK(peak <= 64.0 * (1 << 20));
    // The bomb: never more than pids.max in the sandbox (30 + nsrun's PID 1,
    // + nsrun itself in the scope), the forks refused are counted, and the
    // timeout ends it within the kill-after and the guest's slowness.
    const std::string bomb = line(out, "V: " + w + " bomb");
    CHECK(bomb.find(" exit 124 ") != std::string::npos);
    CHECK(json_value(bomb, "pids") == "\"cgroup\"");
    CHECK(bomb.find("\"kind\":\"limit\",\"what\":\"pids\"") != std::string::npos);
    const auto pids_peak = bomb.find("pids.peak ");
    REQUIRE(pids_peak != std::string::npos);
    CHECK(number(bomb.substr(pids_peak + 10)) <= 32);
    CHECK(elapsed(bomb) > 0);
    CHECK(elapsed(bomb) < 3 + 1 + 10);
    vm::say(w + ": the bomb (--timeout 3s --kill-after 1s) ended after " + std::to_string(elapsed(bomb)) + " s");
    // The busy loop gets its 0.2 core: CPU time over wall time.
    const std::string cpu = line(out, "V: " + w + " cpu");
    CHECK(cpu.find(" exit 0 ") != std::string::npos);
    CHECK(json_value(cpu, "cpu") == "\"cgroup\"");
    const double wall = number(json_value(cpu, "wall_micros"));
    const double used = number(json_value(cpu, "user_micros")) + number(json_value(cpu, "system_micros"));
    REQUIRE(wall > 0);
    CHECK(used / wall < 0.4);  // a whole core unlimited
    vm::say(w + ": --limit-cpu 0.2: " + std::to_string(used / 1e6) + " s of CPU in " + std::to_string(wall / 1e6) +
            " s (" + std::to_string(used / wall) + " of a core)");
    // The daemon in its own session, ignoring SIGTERM, ends with the rest.
    const std::string daemon = line(out, "V: " + w + " daemon");
    CHECK(daemon.find(" exit 124 ") != std::string::npos);
    CHECK(daemon.find(" left 0") != std::string::npos);
    CHECK(elapsed(daemon) > 0);
    CHECK(elapsed(daemon) < 2 + 1 + 10);
    // PID 1 started in the sandbox's cgroup, the root of the command's
    // cgroup namespace; nsrun in its leaf; the scope itself empty.
    const std::string into = line(out, "V: " + w + " into");
    CHECK(into.find("inside [0::/]") != std::string::npos);
    CHECK(into.find("supervisor [] ") == std::string::npos);
    CHECK(into.find("sandbox [] ") == std::string::npos);
    CHECK(into.find("scope []") != std::string::npos);
    // The Landlock rung: its supervisor, and so the command, in the cgroup.
    const std::string ll_hog = line(out, "V: " + w + " landlock hog");
    CHECK(json_value(ll_hog, "rung") == "\"landlock\"");
    CHECK(json_value(ll_hog, "how") == "\"oom\"");
    CHECK(json_value(ll_hog, "memory") == "\"cgroup\"");
    CHECK(json_value(ll_hog, "peak_memory_source") == "\"memory.peak\"");
    const std::string ll_bomb = line(out, "V: " + w + " landlock bomb");
    CHECK(json_value(ll_bomb, "rung") == "\"landlock\"");
    CHECK(json_value(ll_bomb, "pids") == "\"cgroup\"");
    CHECK(ll_bomb.find("\"kind\":\"limit\",\"what\":\"pids\"") != std::string::npos);
    const auto ll_peak = ll_bomb.find("pids.peak ");
    REQUIRE(ll_peak != std::string::npos);
    CHECK(number(ll_bomb.substr(ll_peak + 10)) <= 22);
  }
  // No delegated subtree: strict refuses, naming why; best-effort runs and
  // says what it used instead.
  const std::string strict = line(out, "V: plain strict");
  CHECK(strict.find("exit 125") != std::string::npos);
  CHECK(strict.find("not delegated") != std::string::npos);
  const std::string best = line(out, "V: plain best-effort");
  CHECK(best.find("exit 0") != std::string::npos);
  CHECK(best.find("RLIMIT_AS per process instead (best-effort") != std::string::npos);
  CHECK(json_value(best, "memory") == "\"rlimit\"");
  // A shell beside nsrun in the delegated cgroup: refused before anything
  // is made, with the way out.
  const std::string shared = line(out, "V: shared");
  CHECK(shared.find("exit 125") != std::string::npos);
  CHECK(shared.find("other process") != std::string::npos);
  CHECK(shared.find("Delegate=yes") != std::string::npos);
  // $NSRUN_CGROUP: an empty delegated cgroup, used without moving nsrun,
  // and nothing is left in it.
  const std::string conf = line(out, "V: configured");
  CHECK(conf.find("exit 0 left []") != std::string::npos);
  CHECK(json_value(conf, "memory") == "\"cgroup\"");
  // Nothing left: no sandbox cgroup, no process; the only nsrun cgroups are
  // the empty leaves nsrun moved itself into.
  CHECK(out.find("V: left sandboxes [] processes 0") != std::string::npos);
  for (std::size_t at = out.find("V: leaf "); at != std::string::npos; at = out.find("V: leaf ", at + 1)) {
    const std::string leaf = out.substr(at, out.find('\n', at) - at);
    INFO(leaf);
    CHECK(leaf.find("/nsrun-supervisor procs []") != std::string::npos);
  }
  // The bench's limits row, paired with workspace-write: figures, not
  // asserted (software emulation on a shared host).
  CHECK(out.find("V: bench exit 0") != std::string::npos);
  if (const auto from = out.find("V: bench start"), to = out.find("V: bench exit");
      from != std::string::npos && to != std::string::npos && to > from)
    vm::say("nsrun bench in the cgroup v2 guest:\n" + out.substr(from, to - from));
}
