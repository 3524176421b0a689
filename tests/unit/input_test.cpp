// Bad input that would get through or take nsrun down, checked without
// privileges: NUL bytes in policy strings, the size caps on whole reads,
// messages that stay one line however hostile the path, errors that cross the
// channel whole, the report's opening rules and the deleted working
// directory.
#include <catch2/catch_test_macros.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <string>

#include "cli/native.hpp"
#include "launch/report.hpp"
#include "ns/channel.hpp"
#include "policy/json.hpp"
#include "policy/policy_json.hpp"
#include "policy/presets.hpp"
#include "policy/validate.hpp"
#include "sys/error.hpp"
#include "sys/io.hpp"

using namespace nsrun;
using K = MountOp::Kind;
using namespace std::string_literals;

namespace {

Policy runnable() {
  Policy p;
  p.workspace = "/tmp";
  p.argv = {"true"};
  return p;
}

Result<Policy> from_text(std::string_view text) {
  auto doc = json::parse(text);
  if (!doc) return fail(doc.error());
  return from_json(*doc);
}

// A scratch directory for the report tests, removed at the end.
struct Scratch {
  std::string path;
  Scratch() {
    char tmpl[] = "/tmp/nsrun-input-test.XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~Scratch() { (void)std::system(("rm -rf '" + path + "'").c_str()); }
  std::string operator/(std::string_view name) const { return path + "/" + std::string(name); }
};

std::string contents(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd);
  auto text = read_all(fd.get(), "read", path, max_input_bytes);
  REQUIRE(text);
  return *text;
}

void put(const std::string& path, std::string_view text) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  REQUIRE(fd);
  REQUIRE(write_all(fd.get(), text, "write", path));
}

bool is_regular_file(const std::string& path) {
  struct stat st{};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

LaunchReport sample_report() {
  LaunchReport r;
  r.rung = "namespaces";
  r.exit_code = 0;
  return r;
}

}  // namespace

// ---------------------------------------------------------------- NUL

TEST_CASE("a NUL in any policy string that becomes a path, name or argument is refused", "[input][nul]") {
  const std::string nul_path = "/\0/var/tmp/x"s;
  auto refused = [](const Policy& p, std::string_view step) {
    auto r = validate(p, true);
    REQUIRE_FALSE(r);
    CHECK(r.error().kind == ErrorKind::usage);
    CHECK(r.error().step == step);
    CHECK(r.error().message().find("contains a NUL byte") != std::string::npos);
    CHECK(r.error().message().find('\0') == std::string::npos);
  };
  Policy p = runnable();
  p.writable = {nul_path};
  refused(p, "--writable");
  p = runnable();
  p.workspace = nul_path;
  refused(p, "--workspace");
  p = runnable();
  p.mounts = {mount_op(K::ro_bind, nul_path, "/x")};
  refused(p, "--ro-bind");
  p = runnable();
  p.mounts = {mount_op(K::bind, "/tmp", nul_path)};
  refused(p, "--bind");
  p = runnable();
  p.mounts = {mount_op(K::tmpfs, "", "/x")};
  p.mounts[0].layers = {nul_path};
  refused(p, "--tmpfs");
  p = runnable();
  p.env = {EnvOp{EnvOp::Kind::set, "A\0B"s, "v"}};
  refused(p, "--setenv");
  p = runnable();
  p.env = {EnvOp{EnvOp::Kind::set, "A", "v\0LD_PRELOAD=/x"s}};
  refused(p, "--setenv");
  p = runnable();
  p.argv = {"sh", "-c\0x"s};
  refused(p, "command");
  p = runnable();
  p.chdir = nul_path;
  refused(p, "--chdir");
  p = runnable();
  p.report_path = "/tmp/r\0.json"s;
  refused(p, "--report");
  p = runnable();
  p.argv0 = "a\0b"s;
  refused(p, "--argv0");
  p = runnable();
  p.lock_files = {nul_path};
  refused(p, "--lock-file");
  p = runnable();
  p.hostname = "h\0x"s;
  refused(p, "--hostname");
}

TEST_CASE("file contents may hold any byte, NUL included", "[input][nul]") {
  Policy p = runnable();
  p.mounts = {mount_op(K::file, "", "/etc/blob")};
  p.mounts[0].data = "a\0b"s;
  CHECK(validate(p, true));
  auto back = from_json(to_json(p));
  REQUIRE(back);
  CHECK(back->mounts[0].data == "a\0b"s);
}

TEST_CASE("policy JSON refuses \\u0000 in every string but file data", "[input][nul][json]") {
  for (std::string_view text : {
           R"({"writable":["/\u0000/var/tmp/x"]})",
           R"({"workspace":"/\u0000/tmp"})",
           R"({"mounts":[{"kind":"ro-bind","source":"/etc\u0000x","dest":"/x"}]})",
           R"({"mounts":[{"kind":"ro-bind","source":"/etc","dest":"/\u0000x"}]})",
           R"({"env":[{"op":"set","name":"A","value":"x\u0000y"}]})",
           R"({"env":[{"op":"set","name":"A\u0000","value":"x"}]})",
           R"({"argv":["sh","-c\u0000","x"]})",
           R"({"chdir":"/\u0000"})",
           R"({"report_path":"/tmp/r\u0000"})",
       }) {
    INFO(text);
    auto p = from_text(text);
    REQUIRE_FALSE(p);
    CHECK(p.error().message().find("contains a NUL byte") != std::string::npos);
  }
  auto data = from_text(R"({"mounts":[{"kind":"file","dest":"/x","data":"a\u0000b"}]})");
  REQUIRE(data);
  CHECK(data->mounts[0].data == "a\0b"s);
}

// ---------------------------------------------------------------- caps

TEST_CASE("read_all stops one byte past its cap with EFBIG", "[input][cap]") {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  Fd in(fds[0]), out(fds[1]);
  REQUIRE(write_all(out.get(), std::string(100, 'x'), "write", "pipe"));
  out.reset();
  auto big = read_all(in.get(), "read", "pipe", 99);
  REQUIRE_FALSE(big);
  CHECK(big.error().err == EFBIG);
  CHECK(big.error().kind == ErrorKind::usage);
  CHECK(big.error().message() == "read pipe: more than 99 bytes: File too large");

  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  in = Fd(fds[0]);
  out = Fd(fds[1]);
  REQUIRE(write_all(out.get(), std::string(100, 'x'), "write", "pipe"));
  out.reset();
  auto exact = read_all(in.get(), "read", "pipe", 100);
  REQUIRE(exact);
  CHECK(exact->size() == 100);
}

TEST_CASE("a policy file larger than the cap is refused in one line, without reading it all", "[input][cap]") {
  auto p = load_policy_file("/dev/zero");
  REQUIRE_FALSE(p);
  CHECK(p.error().kind == ErrorKind::usage);
  CHECK(p.error().message() == "--policy: /dev/zero: larger than 16777216 bytes");
}

// ---------------------------------------------------------------- messages

TEST_CASE("printable escapes control bytes and keeps everything else", "[input][message]") {
  CHECK(printable("plain /path/with spaces") == "plain /path/with spaces");
  CHECK(printable("a\nb") == "a\\nb");
  CHECK(printable("a\tb\rc") == "a\\tb\\rc");
  CHECK(printable("\x1b[31mred") == "\\x1b[31mred");
  CHECK(printable("del\x7f") == "del\\x7f");
  CHECK(printable("nul\0x"s) == "nul\\x00x");
  CHECK(printable("caf\xc3\xa9 back\\slash") == "caf\xc3\xa9 back\\slash");
  // Applying it twice changes nothing.
  CHECK(printable(printable("a\nb\x01")) == printable("a\nb\x01"));
}

TEST_CASE("printable shortens long text around an ellipsis, keeping both ends", "[input][message]") {
  const std::string long_text = "exec " + std::string(100000, 'a') + ": File name too long";
  const std::string out = printable(long_text);
  CHECK(out.size() <= printable_max);
  CHECK(out.starts_with("exec aaa"));
  CHECK(out.ends_with(": File name too long"));
  CHECK(out.find("\xe2\x80\xa6") != std::string::npos);
  CHECK(printable(out) == out);
  // Not cut inside a UTF-8 sequence.
  std::string accents;
  for (int i = 0; i < 5000; ++i) accents += "\xc3\xa9";
  const std::string cut = printable(accents, 100);
  CHECK(cut.size() <= 100);
  CHECK(cut.find("\xc3\xa9\xe2\x80\xa6\xc3\xa9") != std::string::npos);
}

TEST_CASE("an error message is one line whatever its path holds", "[input][message]") {
  Error e = sys_error("bind", "/no\nsuch: fake second line", ENOENT);
  CHECK(e.message() == "bind /no\\nsuch: fake second line: No such file or directory");
  Error u = usage_error("--ro", "bad\r\n");
  CHECK(u.message().find('\n') == std::string::npos);
}

TEST_CASE("an error with a huge path crosses the channel whole, cut visibly", "[input][message][channel]") {
  Error e = sys_error("exec", std::string(1 << 20, 'a'), ENAMETOOLONG);
  e.kind = ErrorKind::not_exec;
  ChannelPair channel = *make_channel();
  send_error(channel.child.get(), e);
  channel.child.reset();
  auto received = receive_until_eof(channel.parent.get());
  REQUIRE(received);
  REQUIRE(received->error);
  CHECK(received->error->step == "exec");
  CHECK(received->error->err == ENAMETOOLONG);
  CHECK(received->error->kind == ErrorKind::not_exec);
  CHECK(received->error->path.starts_with("aaaa"));
  CHECK(received->error->path.ends_with("\xe2\x80\xa6"));
  CHECK(received->error->message().ends_with(": File name too long"));
}

TEST_CASE("a gone working directory is named as such, not as an empty --workspace", "[input][message][cwd]") {
  CallerContext ctx;
  ctx.cwd_errno = ENOENT;
  auto inv = parse_native(std::vector<std::string>{"--", "true"}, ctx);
  REQUIRE_FALSE(inv);
  CHECK(inv.error().kind == ErrorKind::usage);
  CHECK(inv.error().message() ==
        "current directory: no longer exists (it is the default workspace); cd to an existing directory or give "
        "--workspace DIR");
  // Nothing needs it: full access, or a workspace given.
  CHECK(parse_native(std::vector<std::string>{"--mode", "full-access", "--", "true"}, ctx));
  auto given = parse_native(std::vector<std::string>{"--workspace", "/tmp", "--", "true"}, ctx);
  REQUIRE(given);
  CHECK(given->policy.workspace == "/tmp");
}

// ---------------------------------------------------------------- report

TEST_CASE("report paths split into parent and name; names that are not files are refused", "[input][report]") {
  using P = std::pair<std::string, std::string>;
  CHECK(*split_report_path("/a/b/r.json") == P{"/a/b", "r.json"});
  CHECK(*split_report_path("/r.json") == P{"/", "r.json"});
  CHECK(*split_report_path("r.json") == P{".", "r.json"});
  CHECK(*split_report_path("d/r.json") == P{"d", "r.json"});
  for (std::string_view bad : {"", "/", "/a/", ".", "..", "/a/.", "/a/.."}) {
    INFO(bad);
    CHECK_FALSE(split_report_path(bad));
  }
}

TEST_CASE("the report file is opened before the run: symlinks, FIFOs, devices, hard links refused",
          "[input][report]") {
  Scratch dir;
  const std::string target = dir / "target";
  put(target, "precious\n");
  Policy p = runnable();

  p.report_path = dir / "link";
  REQUIRE(::symlink(target.c_str(), p.report_path.c_str()) == 0);
  auto link = ReportSink::open(p);
  REQUIRE_FALSE(link);
  CHECK(link.error().kind == ErrorKind::usage);
  CHECK(link.error().message().find("symbolic link") != std::string::npos);

  p.report_path = dir / "dangling";
  REQUIRE(::symlink((dir / "nothing").c_str(), p.report_path.c_str()) == 0);
  CHECK_FALSE(ReportSink::open(p));
  CHECK_FALSE(is_regular_file(dir / "nothing"));

  p.report_path = dir / "fifo";
  REQUIRE(::mkfifo(p.report_path.c_str(), 0644) == 0);
  auto fifo = ReportSink::open(p);
  REQUIRE_FALSE(fifo);
  CHECK(fifo.error().message().find("not a regular file") != std::string::npos);

  p.report_path = "/dev/null";
  CHECK_FALSE(ReportSink::open(p));

  p.report_path = dir / "hard";
  REQUIRE(::link(target.c_str(), p.report_path.c_str()) == 0);
  auto hard = ReportSink::open(p);
  REQUIRE_FALSE(hard);
  CHECK(hard.error().message().find("hard links") != std::string::npos);

  CHECK(contents(target) == "precious\n");

  p.report_path = dir / "missing-dir/r.json";
  CHECK_FALSE(ReportSink::open(p));
}

TEST_CASE("the report is written through the file held from before the run", "[input][report]") {
  Scratch dir;
  Policy p = runnable();
  p.report_path = dir / "r.json";
  put(p.report_path, std::string(5000, 'x'));  // an older, longer report
  auto sink = ReportSink::open(p);
  REQUIRE(sink);
  // Opening does not truncate; writing does.
  CHECK(contents(p.report_path).size() == 5000);
  REQUIRE(sink->write(sample_report()));
  const std::string text = contents(p.report_path);
  CHECK(text.starts_with(R"({"schema_version":1,"rung":"namespaces")"));
  CHECK(text.ends_with("}\n"));

  Policy fresh = runnable();
  fresh.report_path = dir / "new.json";
  auto created = ReportSink::open(fresh);
  REQUIRE(created);
  CHECK(is_regular_file(fresh.report_path));
  REQUIRE(created->write(sample_report()));
  CHECK(contents(fresh.report_path).starts_with("{"));
}

TEST_CASE("a name replaced during the run gets the report by rename, never through what was planted",
          "[input][report]") {
  Scratch dir;
  const std::string target = dir / "target";
  Policy p = runnable();
  p.report_path = dir / "r.json";

  auto replaced_by = [&](const std::function<void()>& plant) {
    put(target, "precious\n");
    auto sink = ReportSink::open(p);
    REQUIRE(sink);
    plant();  // what the command would do while it runs
    REQUIRE(sink->write(sample_report()));
    CHECK(contents(target) == "precious\n");
    CHECK(is_regular_file(p.report_path));
    CHECK(contents(p.report_path).starts_with(R"({"schema_version":1,"rung":"namespaces")"));
    (void)::unlink(p.report_path.c_str());
  };
  replaced_by([&] {
    REQUIRE(::unlink(p.report_path.c_str()) == 0);
    REQUIRE(::symlink(target.c_str(), p.report_path.c_str()) == 0);
  });
  replaced_by([&] {
    REQUIRE(::unlink(p.report_path.c_str()) == 0);
    REQUIRE(::link(target.c_str(), p.report_path.c_str()) == 0);
  });
  replaced_by([&] {
    REQUIRE(::unlink(p.report_path.c_str()) == 0);
    REQUIRE(::mkfifo(p.report_path.c_str(), 0644) == 0);
  });
  replaced_by([&] { REQUIRE(::unlink(p.report_path.c_str()) == 0); });
  // The permissions the file had before the run survive the replacement.
  put(target, "precious\n");
  {
    auto sink = ReportSink::open(p);
    REQUIRE(sink);
    REQUIRE(::chmod(p.report_path.c_str(), 0600) == 0);
    REQUIRE(::unlink(p.report_path.c_str()) == 0);
    REQUIRE(::symlink(target.c_str(), p.report_path.c_str()) == 0);
    REQUIRE(sink->write(sample_report()));
    struct stat st{};
    REQUIRE(::lstat(p.report_path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(contents(target) == "precious\n");
    (void)::unlink(p.report_path.c_str());
  }
  // No temporary file is left behind.
  CHECK(std::system(("test -z \"$(ls -A '" + dir.path + "' | grep -v '^target$')\"").c_str()) == 0);

  // A name near NAME_MAX: the temporary name stays short.
  {
    Policy longer = p;
    longer.report_path = dir / std::string(250, 'r');
    auto sink = ReportSink::open(longer);
    REQUIRE(sink);
    REQUIRE(::unlink(longer.report_path.c_str()) == 0);
    REQUIRE(::symlink(target.c_str(), longer.report_path.c_str()) == 0);
    REQUIRE(sink->write(sample_report()));
    CHECK(is_regular_file(longer.report_path));
    CHECK(contents(target) == "precious\n");
    (void)::unlink(longer.report_path.c_str());
  }

  // A directory cannot be replaced by a file: an error, the directory stays.
  auto sink = ReportSink::open(p);
  REQUIRE(sink);
  REQUIRE(::unlink(p.report_path.c_str()) == 0);
  REQUIRE(::mkdir(p.report_path.c_str(), 0755) == 0);
  auto r = sink->write(sample_report());
  REQUIRE_FALSE(r);
  CHECK(r.error().message().find("replaced") != std::string::npos);
}

TEST_CASE("a symlink on the way to the report is followed only outside the writable roots", "[input][report]") {
  Scratch dir;
  const std::string ws = dir / "ws";
  const std::string elsewhere = dir / "elsewhere";
  REQUIRE(::mkdir(ws.c_str(), 0755) == 0);
  REQUIRE(::mkdir(elsewhere.c_str(), 0755) == 0);
  put(elsewhere + "/important", "precious\n");
  // Planted by an earlier command in its workspace.
  REQUIRE(::symlink(elsewhere.c_str(), (ws + "/out").c_str()) == 0);
  Policy p = runnable();
  p.workspace = ws;
  p.report_path = ws + "/out/important";
  auto planted = ReportSink::open(p);
  REQUIRE_FALSE(planted);
  CHECK(planted.error().message().find("out on the way is a symbolic link") != std::string::npos);
  p.report_path = ws + "/out/new.json";
  CHECK_FALSE(ReportSink::open(p));
  CHECK_FALSE(is_regular_file(elsewhere + "/new.json"));
  // The same through a --writable root, and below it.
  p.workspace = "/tmp";
  p.writable = {dir.path};
  p.report_path = ws + "/out/new.json";
  CHECK_FALSE(ReportSink::open(p));
  // Outside every writable root a symlink on the way is ordinary.
  p.writable = {};
  p.mode = Mode::read_only;
  p.workspace = ws;
  p.report_path = ws + "/out/new.json";
  auto ordinary = ReportSink::open(p);
  REQUIRE(ordinary);
  CHECK(is_regular_file(elsewhere + "/new.json"));
  CHECK(contents(elsewhere + "/important") == "precious\n");
}

TEST_CASE("--report-fd must be open for writing", "[input][report]") {
  Policy p = runnable();
  Fd ro(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  p.report_fd = ro.get();
  auto r = ReportSink::open(p);
  REQUIRE_FALSE(r);
  CHECK(r.error().message() == "--report-fd: " + std::to_string(ro.get()) + ": not open for writing");
  Fd wo(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  p.report_fd = wo.get();
  CHECK(ReportSink::open(p));
}
