// nsrun as `bwrap` however it is installed (a symlink, a hard link, a
// copy), under the probes real harnesses make of it, and the fds a bwrap
// caller hands over: bwrap passes on every fd it was given without
// close-on-exec (less those its options use up), and nothing of its own.
// Then the command lines of more callers (the GNOME thumbnailer, opam's
// sandbox script, mat2, a flatpak-style caller that hands over fds for
// everything), kept as data below, each run under Debian's bwrap (the
// oracle) and under nsrun, with their effects checked on the host.
#include "bwrap_oracle.hpp"
#include "harness.hpp"

#include <catch2/catch_test_macros.hpp>
#include <fmt/core.h>

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

using namespace nsrun_test;

namespace {

enum class Install { symlink, hardlink, copy };

// nsrun copied into a directory of its own (so a hard link is on the same
// file system) and installed there as `bwrap`.
struct Installed {
  TempDir dir{"install"};
  std::string nsrun = dir / "nsrun";
  std::string bwrap = dir / "bwrap";
  explicit Installed(Install how) {
    REQUIRE(run({"cp", nsrun_path(), nsrun}).exit_code == 0);
    switch (how) {
      case Install::symlink: REQUIRE(::symlink("nsrun", bwrap.c_str()) == 0); break;
      case Install::hardlink: REQUIRE(::link(nsrun.c_str(), bwrap.c_str()) == 0); break;
      case Install::copy: REQUIRE(run({"cp", nsrun, bwrap}).exit_code == 0); break;
    }
  }
  // What a caller that canonicalises the path it found runs (Codex does).
  std::string resolved() const {
    char buf[PATH_MAX];
    REQUIRE(::realpath(bwrap.c_str(), buf) != nullptr);
    return buf;
  }
};

// `PROGRAM ARGS` with argv[0] set to `name`, as execv() with an argv of the
// caller's own lets it be.
RunResult run_named(const std::string& program, const std::string& name, const std::string& args) {
  return run({"/bin/bash", "-c", fmt::format("exec -a {} {} {}", shell_quote(name), shell_quote(program), args)});
}

// A seccomp program, as bwrap's --seccomp takes it: on x86-64, mkdir and
// mkdirat refused with EPERM, everything else allowed (elsewhere: allow all).
std::string mkdir_refusing_program() {
  std::vector<sock_filter> prog;
#if defined(__x86_64__)
  prog = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4),                     // arch
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xc000003e, 1, 0),     // AUDIT_ARCH_X86_64
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0),                     // nr
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 83, 2, 0),             // mkdir
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 258, 1, 0),            // mkdirat
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),          // EPERM
  };
#else
  prog = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
#endif
  return std::string(reinterpret_cast<const char*>(prog.data()), prog.size() * sizeof(sock_filter));
}

constexpr bool refuses_mkdir =
#if defined(__x86_64__)
    true;
#else
    false;
#endif

bool is_symlink(const char* path) {
  struct stat st{};
  return ::lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}
bool is_dir(const char* path) {
  struct stat st{};
  return ::stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

TEST_CASE("bwrap install: a symlink, a hard link and a copy all pass Codex's probes and run its preflight",
          "[bwrap][install]") {
  require_userns();
  for (Install how : {Install::symlink, Install::hardlink, Install::copy}) {
    DYNAMIC_SECTION((how == Install::symlink ? "symlink" : how == Install::hardlink ? "hard link" : "copy")) {
      Installed inst(how);
      const std::string path = inst.resolved();
      // Codex runs the resolved path with `--help` (argv[0] that path: for
      // a symlink, nsrun's own name) and looks for these in its output.
      RunResult help = run({path, "--help"});
      INFO(help.out << help.err);
      CHECK(help.exit_code == 0);
      for (const char* want : {"--as-pid-1", "--perms", "--argv0", "--ro-bind", "--unshare-user"})
        CHECK(help.out.find(want) != std::string::npos);
      // Its user-namespace probe, still under the resolved path's name.
      RunResult probe = run({path, "--unshare-user", "--unshare-net", "--ro-bind", "/", "/", "/bin/true"});
      INFO(probe.err);
      CHECK(probe.exit_code == 0);
      CHECK(probe.err.empty());
      // The preflight, with argv[0] "bwrap" as Codex builds it.
      std::string bind_dirs;
      for (const char* d : {"/bin", "/etc", "/lib", "/lib64", "/sbin", "/usr"})
        if (::access(d, F_OK) == 0) bind_dirs += fmt::format(" --ro-bind {0} {0}", d);
      RunResult pre = run_named(
          path, "bwrap",
          fmt::format("--as-pid-1 --new-session --die-with-parent --tmpfs / --dev /dev{} --unshare-user --unshare-pid "
                      "--unshare-ipc --unshare-net --proc /proc --cap-drop ALL --argv0 codex-linux-sandbox -- "
                      "/bin/sh -c 'echo $0 $$'",
                      bind_dirs));
      INFO(pre.err);
      CHECK(pre.exit_code == 0);
      CHECK(pre.out == "codex-linux-sandbox 1\n");
      // `bwrap --version` by the name a caller found.
      RunResult version = run({inst.bwrap, "--version"});
      CHECK(version.out.starts_with("bubblewrap "));
    }
  }
}

TEST_CASE("bwrap dialect: the fds the caller hands over reach the command, nsrun's own never do",
          "[bwrap][fds]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  TempDir ws("fds");
  const std::string file = ws / "via-fd";

  SECTION("an fd opened by the shell is the command's, at the same number") {
    RunResult r = same_as_oracle(shim.path, fmt::format("--ro-bind / / sh -c 'echo through >&7' 7>{}", shell_quote(file)));
    CHECK(r.exit_code == 0);
    CHECK(read_file(file) == "through\n");
  }
  // The command's fd table, whatever nsrun needed to build the sandbox
  // (its channel, PID 1's fds, status and lock fds, a network namespace):
  // exactly bwrap's, i.e. the standard three, the one `ls` opens, and the
  // caller's fd 7.
  const std::string lock = ws / "lock";
  write_file(lock, "");
  write_file(ws / "sync", "");
  // (ls sorts by name.) Fds 7 to 11 are open; the options take some.
  const std::pair<const char*, const char*> cases[] = {
      {"", "0 1 10 11 2 3 7 8 9"},
      {"--unshare-pid", "0 1 10 11 2 3 7 8 9"},
      {"--unshare-pid --as-pid-1", "0 1 10 11 2 3 7 8 9"},
      {"--unshare-user --unshare-net --unshare-ipc", "0 1 10 11 2 3 7 8 9"},
      {"--unshare-pid --lock-file {lock} --sync-fd 8", "0 1 10 11 2 3 7 9"},
      {"--unshare-user --unshare-pid --info-fd 9 --json-status-fd 10", "0 1 11 2 3 7 8"},
      {"--unshare-pid --block-fd 11 --sync-fd 8", "0 1 10 2 3 7 9"},
  };
  for (const auto& [opts, want] : cases) {
    DYNAMIC_SECTION("the command's fds with " << opts) {
      const std::string args = fmt::format(
          "--ro-bind / / {} sh -c 'echo $(ls /proc/self/fd)' 7>{} 8<{} 9>{} 10>{} 11</dev/null",
          fmt::format(fmt::runtime(opts), fmt::arg("lock", lock)), shell_quote(file), shell_quote(ws / "sync"),
          shell_quote(ws / "info"), shell_quote(ws / "status"));
      RunResult r = same_as_oracle(shim.path, args);
      CHECK(r.exit_code == 0);
      CHECK(r.out == std::string(want) + "\n");
    }
  }
  SECTION("--sync-fd stays open in the command with --as-pid-1, as in bwrap") {
    RunResult r = same_as_oracle(shim.path, fmt::format("--ro-bind / / --unshare-pid --as-pid-1 --sync-fd 8 sh -c "
                                                        "'echo $(ls /proc/self/fd)' 8<{}",
                                                        shell_quote(ws / "sync")));
    CHECK(r.out == "0 1 2 3 8\n");
  }
  SECTION("nsrun's own command line passes only what --pass-fd names") {
    const std::string script = shell_quote("echo x >&7 && echo passed; echo y >&8 && echo named");
    RunResult r = run({"/bin/bash", "-c",
                       fmt::format("exec {} --pass-fd 8 -- sh -c {} 7>{} 8>{}", shell_quote(nsrun_path()), script,
                                   shell_quote(file), shell_quote(ws / "named"))},
                      at(ws));
    INFO(r.err);
    CHECK(r.out == "named\n");
    CHECK(read_file(file).empty());
    CHECK(read_file(ws / "named") == "y\n");
  }
}

// The callers' command lines. Placeholders: {opam_sys} opam's system mounts, {mat2_dirs} mat2's
// read-only directories, {ws} a workspace (the current directory), {in} an
// input file in it, {out} a directory for results, {tmp} the caller's
// TMPDIR, {prefix} a read-only prefix (opam's switch). Plain shell
// commands only: nsrun-probe is not inside these roots. Fd 10 holds a
// seccomp program refusing mkdir.
struct CallerLine {
  const char* name;
  const char* source;   // where the shape comes from
  const char* args;     // fmt template; then ` -- /bin/sh -c COMMAND`
  const char* command;  // fmt template too
  const char* want;     // its stdout
};

const CallerLine caller_lines[] = {
    {"GNOME thumbnailer",
     "recorded from Debian's gnome-desktop 43.2 (strace -f -e execve -s 4096 of GnomeDesktop.DesktopThumbnailFactory"
     ".generate_thumbnail on a PNG, gdk-pixbuf-thumbnailer as the thumbnailer): {tmp} stands for its GStreamer "
     "cache directory, {out} for its temporary directory, gdk-pixbuf-thumbnailer replaced by the shell; the test "
     "\"the real GNOME thumbnailer\" below runs it whole",
     "--ro-bind /usr /usr --ro-bind-try /etc/ld.so.cache /etc/ld.so.cache --symlink /usr//bin /bin "
     "--symlink /usr//lib64 /lib64 --symlink /usr//lib /lib --symlink /usr//sbin /sbin "
     "--ro-bind-try /var/cache/fontconfig /var/cache/fontconfig --setenv GST_REGISTRY_1_0 {tmp}/gstreamer-1.0.registry "
     "--bind {tmp} {tmp} --ro-bind-try /etc/alternatives /etc/alternatives --proc /proc --dev /dev --chdir / "
     "--setenv GIO_USE_VFS local --unshare-all --die-with-parent --bind {out} /tmp "
     "--ro-bind {in} /tmp/gnome-desktop-file-to-thumbnail.png --seccomp 10",
     "cat /tmp/gnome-desktop-file-to-thumbnail.png > /tmp/gnome-desktop-thumbnailer.png; "
     "mkdir /tmp/made 2>/dev/null || echo mkdir-refused; echo $GIO_USE_VFS; ls /sys 2>/dev/null | wc -l",
     "mkdir-refused\nlocal\n0\n"},
    {"opam sandbox (build)",
     "recorded from Debian's opam 2.1.2 (strace -f -e execve -s 4096 opam pin add of a local package, in an opam "
     "root made with opam init --bare from a local repository): its build step, {opam_sys} the system mounts "
     "of its sandbox.sh, {prefix} the switch, {ws} the package's build directory; the test \"the real opam\" below "
     "runs it whole",
     "--unshare-net --new-session --die-with-parent --proc /proc --dev /dev --setenv TMPDIR /opam-tmp "
     "--setenv TMP /opam-tmp --setenv TEMPDIR /opam-tmp --setenv TEMP /opam-tmp --tmpfs /opam-tmp --tmpfs /run "
     "{opam_sys} --ro-bind {prefix} {prefix} --bind {ws} {ws}",
     "(echo yes > {ws}/built) && echo ok; (echo no > {prefix}/lib) 2>&1 | grep -o 'Read-only file system'; "
     "(echo t > $TMPDIR/scratch) && echo ok; awk 'NR>2{{print $1}}' /proc/net/dev",
     "ok\nRead-only file system\nok\nlo:\n"},
    // The run itself is the test "the real mat2" below.
    {"mat2",
     "recorded from Debian's mat2 0.13.3 (strace -f -e execve -s 4096 mat2 --no-sandbox --lightweight in.png, in "
     "the input's directory; that mat2 turns its sandbox on with --no-sandbox): the lines mounted per existing "
     "directory, the caller's TMPDIR temp directory bound over the input's directory for the output, exiftool "
     "replaced by the shell",
     "--ro-bind /usr /usr {mat2_dirs} --ro-bind {ws} {ws} --ro-bind /etc/ld.so.cache /etc/ld.so.cache --dev /dev "
     "--proc /proc --chdir {ws} --unshare-user-try --unshare-ipc --unshare-pid --unshare-net --unshare-uts "
     "--unshare-cgroup-try --new-session --cap-drop all --bind {out} {ws} --ro-bind {in} {in}",
     "cat {in} > {ws}/out.png; (echo no > /usr/stray) 2>/dev/null || echo refused; "
     "grep -c '^CapEff:.0000000000000000' /proc/self/status",
     "refused\n1\n"},
};

// Where each caller's effects land on the host, removed between the
// oracle's run and nsrun's so that each run shows its own.
struct CallerDirs {
  TempDir ws{"ws"}, out{"out"}, tmp{"tmp"}, prefix{"prefix"};
  std::vector<std::string> effects() const {
    return {out / "gnome-desktop-thumbnailer.png", ws / "built", tmp / "scratch", out / "out.png"};
  }
};

std::string system_mounts(std::initializer_list<const char*> dirs, bool symlinks) {
  std::string out;
  for (const char* d : dirs) {
    if (symlinks && is_symlink(d)) {
      char target[PATH_MAX];
      if (::realpath(d, target) != nullptr) out += fmt::format(" --symlink {} {}", target, d);
    } else if (is_dir(d)) {
      out += fmt::format(" --ro-bind {0} {0}", d);
    }
  }
  return out;
}

TEST_CASE("bwrap callers: the thumbnailer's, opam's and mat2's command lines", "[bwrap][callers]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  const std::string opam_sys =
      system_mounts({"/usr", "/bin", "/lib", "/lib32", "/lib64", "/etc", "/opt", "/home", "/var", "/tmp"}, true);
  const std::string mat2_dirs =
      system_mounts({"/lib", "/lib64", "/bin", "/sbin", "/etc/alternatives"}, false);
  for (const auto& line : caller_lines) {
    DYNAMIC_SECTION(line.name) {
      INFO(line.source);
      CallerDirs d;
      const std::string in = d.ws / "input.png";
      write_file(in, "PNG\n");
      write_file(d.ws / "filter.bpf", mkdir_refusing_program());
      auto fill = [&](const char* tmpl) {
        return fmt::format(fmt::runtime(tmpl), fmt::arg("opam_sys", opam_sys),
                           fmt::arg("mat2_dirs", mat2_dirs), fmt::arg("ws", d.ws.path()), fmt::arg("in", in),
                           fmt::arg("out", d.out.path()), fmt::arg("tmp", d.tmp.path()),
                           fmt::arg("prefix", d.prefix.path()));
      };
      const std::string args = fmt::format("{} -- /bin/sh -c {} 10<{}", fill(line.args),
                                           shell_quote(fill(line.command)), shell_quote(d.ws / "filter.bpf"));
      RunResult want = run_bwrap(oracle, args, at(d.ws));
      for (const auto& f : d.effects()) ::unlink(f.c_str());
      RunResult got = run_bwrap(shim.path, args, at(d.ws));
      INFO("args: " << args);
      INFO("bwrap: " << want.out << want.err << "\nnsrun: " << got.out << got.err);
      CHECK(want.exit_code == 0);
      CHECK(got.exit_code == want.exit_code);
      CHECK(got.out == want.out);
      std::string expected = line.want;
      if (!refuses_mkdir)
        if (auto at_ = expected.find("mkdir-refused\n"); at_ != std::string::npos) expected.erase(at_, 14);
      CHECK(got.out == expected);
      // The effects each caller relies on, on the host.
      const std::string name = line.name;
      if (name.starts_with("GNOME")) {
        CHECK(read_file(d.out / "gnome-desktop-thumbnailer.png") == "PNG\n");
        CHECK_FALSE(file_exists(d.out / "made"));
      } else if (name.starts_with("opam")) {
        CHECK(read_file(d.ws / "built") == "yes\n");
        CHECK_FALSE(file_exists(d.tmp / "scratch"));
        CHECK_FALSE(file_exists(d.prefix / "lib"));
      } else {
        CHECK(read_file(d.out / "out.png") == "PNG\n");
        CHECK_FALSE(file_exists("/usr/stray"));
        CHECK(read_file(in) == "PNG\n");
      }
    }
  }
}

TEST_CASE("bwrap callers: a flatpak-style caller that hands everything over as fds", "[bwrap][callers][fds]") {
  require_userns();
  require_oracle();
  BwrapShim shim;
  TempDir ws("flatpak");
  // flatpak puts the mounts in an --args file and hands over data, the
  // status pipes and the app's own fds as descriptors.
  const std::vector<std::string> mounts{"--unshare-pid",  "--unshare-user", "--die-with-parent", "--ro-bind", "/",
                                        "/",              "--tmpfs",        "/tmp",              "--ro-bind-data",
                                        "10",             "/tmp/.flatpak-info", "--file",         "11",
                                        "/tmp/passwd",    "--sync-fd",      "12",                "--info-fd",
                                        "13",             "--json-status-fd", "14",              "--block-fd",
                                        "15"};
  std::string args_data;
  for (const auto& a : mounts) args_data += a + '\0';
  write_file(ws / "args", args_data);
  write_file(ws / "info.ini", "[Application]\nname=org.example.App\n");
  write_file(ws / "passwd", "app:x:1000:1000::/home/app:/bin/sh\n");
  write_file(ws / "sync", "");
  const std::string script =
      "cat /tmp/.flatpak-info /tmp/passwd; stat -c %a /tmp/.flatpak-info; echo app-output >&7; ls /proc/self/fd";
  auto args = [&](const std::string& tag) {
    return fmt::format("--args 9 -- /bin/sh -c {} 9<{} 10<{} 11<{} 12<{} 13>{} 14>{} 15</dev/null 7>{}",
                       shell_quote(script), shell_quote(ws / "args"), shell_quote(ws / "info.ini"),
                       shell_quote(ws / "passwd"), shell_quote(ws / "sync"), shell_quote(ws / ("info." + tag)),
                       shell_quote(ws / ("status." + tag)), shell_quote(ws / ("out." + tag)));
  };
  RunResult want = run_bwrap(oracle, args("bwrap"));
  RunResult got = run_bwrap(shim.path, args("nsrun"));
  INFO("bwrap: " << want.out << want.err << "\nnsrun: " << got.out << got.err);
  CHECK(want.exit_code == 0);
  CHECK(got.exit_code == want.exit_code);
  CHECK(got.out == want.out);
  CHECK(got.out ==
        "[Application]\nname=org.example.App\napp:x:1000:1000::/home/app:/bin/sh\n600\n0\n1\n2\n3\n7\n");
  CHECK(read_file(ws / "out.nsrun") == "app-output\n");
  CHECK(read_file(ws / "info.nsrun").find("\"child-pid\":") != std::string::npos);
  const std::string status = read_file(ws / "status.nsrun");
  CHECK(status.find("\"child-pid\":") != std::string::npos);
  CHECK(status.find("\"exit-code\": 0") != std::string::npos);
}

namespace {

// Where the real callers are installed (npm, outside this repository):
// $NSRUN_TEST_CALLERS, else /opt/callers (node_modules/.bin/srt, codex).
std::string callers_bin(const char* name) {
  const char* dir = std::getenv("NSRUN_TEST_CALLERS");
  return fmt::format("{}/node_modules/.bin/{}", dir != nullptr ? dir : "/opt/callers", name);
}

void require_caller(const char* name, std::initializer_list<const char*> tools = {}) {
  const std::string bin = callers_bin(name);
  if (::access(bin.c_str(), X_OK) != 0)
    unavailable("bwrap-callers", fmt::format("{} is not installed (npm install it under /opt/callers, or set "
                                             "NSRUN_TEST_CALLERS)", bin));
  for (const char* tool : tools)
    if (run({"/bin/sh", "-c", fmt::format("command -v {}", tool)}).exit_code != 0)
      unavailable("bwrap-callers", fmt::format("{} needs {} on PATH", name, tool));
}

// Counts the times a file is opened, exec included (inotify IN_OPEN): how
// the test knows a caller ran nsrun rather than a bwrap of its own. The
// closes are watched too: the kernel merges identical events in a row, and
// an open-close pair per exec keeps them apart.
class OpenCounter {
 public:
  explicit OpenCounter(const std::string& path) : fd_(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) {
    REQUIRE(fd_ >= 0);
    REQUIRE(::inotify_add_watch(fd_, path.c_str(), IN_OPEN | IN_CLOSE_NOWRITE) >= 0);
  }
  ~OpenCounter() { ::close(fd_); }
  OpenCounter(const OpenCounter&) = delete;
  OpenCounter& operator=(const OpenCounter&) = delete;
  int count() {
    alignas(inotify_event) char buf[4096];
    for (;;) {
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) break;
      for (ssize_t at = 0; at < n;) {
        const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
        if ((e->mask & IN_OPEN) != 0) ++opens_;
        at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      }
    }
    return opens_;
  }

 private:
  int fd_;
  int opens_ = 0;
};

}  // namespace

TEST_CASE("bwrap callers: the real sandbox-runtime, with nsrun as the bwrap on PATH", "[bwrap][callers][real]") {
  require_userns();
  require_caller("srt", {"socat", "rg"});
  Installed inst(Install::symlink);
  TempDir ws("srt-ws"), outside("srt-out"), home("srt-home");
  const std::string settings = home / "settings.json";
  write_file(settings, fmt::format(R"({{"filesystem":{{"allowWrite":["{}"],"denyWrite":[],"denyRead":[]}},)"
                                   R"("network":{{"allowedDomains":[],"deniedDomains":[]}}}})",
                                   ws.path()));
  OpenCounter opens(inst.nsrun);
  RunOptions opts = at(ws);
  opts.env = {"HOME=" + home.path(), fmt::format("PATH={}:/usr/bin:/bin", inst.dir.path())};
  opts.timeout = std::chrono::seconds(60);
  RunResult r = run({callers_bin("srt"), "-s", settings, "-c",
                     fmt::format("echo in > {}/in && echo wrote; (echo no > {}/out) 2>&1 | grep -o 'Read-only file "
                                 "system'; awk 'NR>2{{print $1}}' /proc/net/dev",
                                 ws.path(), outside.path())},
                    opts);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "wrote\nRead-only file system\nlo:\n");
  CHECK(read_file(ws / "in") == "in\n");
  CHECK_FALSE(file_exists(outside / "out"));
  CHECK(opens.count() >= 1);  // srt has no bwrap of its own: it ran ours
}

namespace {

// A 1x1 PNG whose tEXt chunk says "Author: secret".
constexpr char png_with_author[] =
    "\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00"
    "\x00\x00\x90\x77\x53\xde\x00\x00\x00\x0d\x74\x45\x58\x74\x41\x75\x74\x68\x6f\x72\x00\x73\x65\x63\x72\x65\x74"
    "\xe8\x51\x6d\xe7\x00\x00\x00\x0c\x49\x44\x41\x54\x78\x9c\x63\xf8\xcf\xc0\x00\x00\x03\x01\x01\x00\xc9\xfe\x92"
    "\xef\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42\x60\x82";

}  // namespace

// mat2 runs exiftool under the first bwrap on PATH (libmat2/bubblewrap.py):
// once to show the metadata, once to write the cleaned copy into a temporary
// directory bound over the input's. Debian's 0.13.3 turns that sandbox on
// with --no-sandbox (its flag is inverted); the open count says whether our
// bwrap ran.
TEST_CASE("bwrap callers: the real mat2, with nsrun as the bwrap on PATH, cleans as under bwrap",
          "[bwrap][callers][real]") {
  require_userns();
  require_oracle();
  if (::access("/usr/bin/mat2", X_OK) != 0 || ::access("/usr/bin/exiftool", X_OK) != 0)
    unavailable("bwrap-callers", "mat2 or exiftool is not installed (apt-get install mat2)");
  Installed inst(Install::symlink);
  TempDir tmp("mat2-tmp");
  struct Result {
    RunResult show, clean;
    std::string cleaned;
  };
  auto mat2 = [&](const std::string& path) {
    TempDir ws("mat2-ws");
    write_file(ws / "in.png", std::string_view(png_with_author, sizeof png_with_author - 1));
    RunOptions opts = at(ws);
    opts.env = {"PATH=" + path, "TMPDIR=" + tmp.path()};
    opts.timeout = std::chrono::seconds(60);
    Result r;
    r.show = run({"/usr/bin/mat2", "--no-sandbox", "--show", "in.png"}, opts);
    r.clean = run({"/usr/bin/mat2", "--no-sandbox", "--lightweight", "in.png"}, opts);
    r.cleaned = file_exists(ws / "in.cleaned.png") ? read_file(ws / "in.cleaned.png") : "(absent)";
    return r;
  };
  const Result want = mat2("/usr/bin:/bin");
  OpenCounter opens(inst.nsrun);
  const Result got = mat2(inst.dir.path() + ":/usr/bin:/bin");
  INFO("bwrap: " << want.show.out << want.show.err << want.clean.out << want.clean.err);
  INFO("nsrun: " << got.show.out << got.show.err << got.clean.out << got.clean.err);
  CHECK(opens.count() >= 2);
  CHECK(want.show.exit_code == 0);
  CHECK(got.show.exit_code == want.show.exit_code);
  CHECK(got.show.out == want.show.out);
  CHECK(got.show.out.find("Author: secret") != std::string::npos);
  CHECK(want.clean.exit_code == 0);
  CHECK(got.clean.exit_code == want.clean.exit_code);
  CHECK(got.cleaned == want.cleaned);
  CHECK(got.cleaned.starts_with("\x89PNG"));
  CHECK(got.cleaned.find("secret") == std::string::npos);
}

// GNOME's thumbnail factory runs the thumbnailer under `bwrap` from PATH
// (gnome-desktop-thumbnail-script.c). Driven here through its GObject
// bindings, as a file manager would; the thumbnail must be the one it makes
// under Debian's bwrap.
TEST_CASE("bwrap callers: the real GNOME thumbnailer, with nsrun as the bwrap on PATH, thumbnails as under bwrap",
          "[bwrap][callers][real]") {
  require_userns();
  require_oracle();
  constexpr const char* factory =
      "import sys, gi\n"
      "gi.require_version('GnomeDesktop', '3.0')\n"
      "from gi.repository import GnomeDesktop, Gio\n"
      "f = GnomeDesktop.DesktopThumbnailFactory.new(GnomeDesktop.DesktopThumbnailSize.NORMAL)\n"
      "if len(sys.argv) > 1:\n"
      "    pix = f.generate_thumbnail(Gio.File.new_for_path(sys.argv[1]).get_uri(), 'image/png')\n"
      "    pix.savev(sys.argv[2], 'png', [], [])\n"
      "    print(pix.get_width(), pix.get_height())\n";
  if (run({"/usr/bin/python3", "-c", factory}).exit_code != 0 || ::access("/usr/bin/gdk-pixbuf-thumbnailer", X_OK) != 0)
    unavailable("bwrap-callers", "GNOME's thumbnail factory is not installed (apt-get install gir1.2-gnomedesktop-3.0 "
                                 "python3-gi libgdk-pixbuf2.0-bin)");
  Installed inst(Install::symlink);
  auto thumbnail = [&](const std::string& path, RunResult& r) {
    TempDir ws("thumb-ws"), home("thumb-home");
    write_file(ws / "in.png", std::string_view(png_with_author, sizeof png_with_author - 1));
    RunOptions opts = at(ws);
    opts.env = {"PATH=" + path, "HOME=" + home.path(), "TMPDIR=" + ws.path()};
    opts.timeout = std::chrono::seconds(60);
    r = run({"/usr/bin/python3", "-c", factory, ws / "in.png", ws / "thumb.png"}, opts);
    return file_exists(ws / "thumb.png") ? read_file(ws / "thumb.png") : std::string("(absent)");
  };
  RunResult want, got;
  const std::string want_png = thumbnail("/usr/bin:/bin", want);
  OpenCounter opens(inst.nsrun);
  const std::string got_png = thumbnail(inst.dir.path() + ":/usr/bin:/bin", got);
  INFO("bwrap: " << want.out << want.err << "\nnsrun: " << got.out << got.err);
  CHECK(opens.count() >= 1);
  CHECK(want.exit_code == 0);
  CHECK(got.exit_code == want.exit_code);
  CHECK(got.out == want.out);
  CHECK(got_png == want_png);
  CHECK(got_png.starts_with("\x89PNG"));
}

// opam builds and installs each package under `bwrap` from PATH (its
// sandbox.sh hook). A root of its own, from a local repository (no
// network), an empty switch, one pinned package whose build writes a file
// and whose install copies it into the switch.
TEST_CASE("bwrap callers: the real opam, with nsrun as the bwrap on PATH, builds and installs as under bwrap",
          "[bwrap][callers][real]") {
  require_userns();
  require_oracle();
  if (::access("/usr/bin/opam", X_OK) != 0 || run({"/bin/sh", "-c", "command -v rsync"}).exit_code != 0)
    unavailable("bwrap-callers", "opam or rsync is not installed (apt-get install opam rsync)");
  Installed inst(Install::symlink);
  auto build = [&](const std::string& path, std::string& installed) {
    TempDir root("opam-root"), repo("opam-repo"), pkg("opam-pkg"), home("opam-home");
    make_dir(repo / "packages");
    write_file(repo / "repo", "opam-version: \"2.0\"\n");
    write_file(pkg / "opam",
               "opam-version: \"2.0\"\nname: \"probe\"\nversion: \"1\"\n"
               "build: [\"sh\" \"-c\" \"echo built > built.txt; (echo x > /usr/stray) 2>/dev/null || echo ro >> built.txt\"]\n"
               "install: [\"sh\" \"-c\" \"mkdir -p %{lib}%/probe && cp built.txt %{lib}%/probe/\"]\n");
    RunOptions opts = at(home);
    opts.env = {"PATH=" + path, "HOME=" + home.path(), "OPAMROOT=" + root / "r", "OPAMYES=1", "OPAMCOLOR=never"};
    opts.timeout = std::chrono::seconds(120);
    RunResult r = run({"/bin/sh", "-c",
                       fmt::format("opam init --bare -n local {} >/dev/null 2>&1 && opam switch create s --empty "
                                   ">/dev/null 2>&1 && opam pin add probe {} 2>&1 | grep -o 'installed probe.1'",
                                   shell_quote(repo.path()), shell_quote(pkg.path()))},
                      opts);
    const std::string file = root / "r/s/lib/probe/built.txt";
    installed = file_exists(file) ? read_file(file) : "(absent)";
    return r;
  };
  std::string want_file, got_file;
  const RunResult want = build("/usr/bin:/bin", want_file);
  OpenCounter opens(inst.nsrun);
  const RunResult got = build(inst.dir.path() + ":/usr/bin:/bin", got_file);
  INFO("bwrap: " << want.out << want.err << "\nnsrun: " << got.out << got.err);
  CHECK(opens.count() >= 2);  // the build and the install
  CHECK(want.exit_code == 0);
  CHECK(got.exit_code == want.exit_code);
  CHECK(got.out == want.out);
  CHECK(got_file == want_file);
  CHECK(got_file == "built\nro\n");
}

TEST_CASE("bwrap callers: the real Codex, with a symlink to nsrun as the bwrap on PATH", "[bwrap][callers][real]") {
  require_userns();
  require_caller("codex");
  Installed inst(Install::symlink);
  TempDir ws("codex-ws"), home("codex-home");
  auto codex = [&](const std::string& script) {
    RunOptions opts = at(ws);
    opts.env = {"CODEX_HOME=" + home.path(), fmt::format("PATH={}:/usr/bin:/bin", inst.dir.path())};
    opts.timeout = std::chrono::seconds(60);
    return run({callers_bin("codex"), "sandbox", "--", "/bin/sh", "-c", script}, opts);
  };
  OpenCounter opens(inst.nsrun);
  RunResult r = codex(fmt::format("(echo no > {}/f) 2>&1 | grep -o 'Read-only file system'; "
                                  "grep '^CapEff:' /proc/self/status",
                                  ws.path()));
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "Read-only file system\nCapEff:\t0000000000000000\n");
  CHECK_FALSE(file_exists(ws / "f"));
  // Its --help probe opens nsrun once; only a sandbox run through nsrun
  // (Codex's own bwrap otherwise, when --help does not list what it wants)
  // opens it again.
  CHECK(opens.count() >= 2);
}
