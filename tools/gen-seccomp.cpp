// Build-time generator: compiles every variant of nsrun's seccomp filters
// with libseccomp and writes them, packed (seccomp/packed.hpp), as C++
// arrays, so that nsrun unpacks a finished program at launch instead of
// compiling one (about a millisecond of libseccomp per launch otherwise)
// and does not link libseccomp at all. The programs are for the
// architecture nsrun is built for, which is the one it runs on.
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "seccomp/compile.hpp"
#include "seccomp/packed.hpp"
#include "seccomp/writes.hpp"

namespace {

// A run shorter than this is cheaper stored again than named by an op.
constexpr std::size_t min_copy = 3;

// Greedy LZ77 over one stream: every sequence added becomes ops that copy
// runs out of the pool; what no earlier run matches is appended to the pool.
template <class T>
struct Packer {
  std::vector<T> pool;
  std::map<T, std::vector<std::size_t>> where;
  std::vector<std::pair<std::size_t, std::size_t>> ops;  // (at, count)

  // The index of its first op and the number of ops.
  std::pair<std::size_t, std::size_t> add(const std::vector<T>& seq) {
    const std::size_t first = ops.size();
    bool literal = false;
    for (std::size_t i = 0; i < seq.size();) {
      std::size_t best = 0, at = 0;
      if (auto it = where.find(seq[i]); it != where.end())
        for (std::size_t o : it->second) {
          std::size_t n = 0;
          while (i + n < seq.size() && o + n < pool.size() && pool[o + n] == seq[i + n]) ++n;
          if (n > best) best = n, at = o;
        }
      if (best >= min_copy) {
        ops.emplace_back(at, best);
        i += best;
        literal = false;
        continue;
      }
      if (literal)
        ++ops.back().second;
      else
        ops.emplace_back(pool.size(), 1);
      literal = true;
      where[seq[i]].push_back(pool.size());
      pool.push_back(seq[i++]);
    }
    return {first, ops.size() - first};
  }

  std::vector<T> unpack(std::pair<std::size_t, std::size_t> range) const {
    std::vector<T> out;
    for (std::size_t i = range.first; i < range.first + range.second; ++i)
      out.insert(out.end(), pool.begin() + static_cast<long>(ops[i].first),
                 pool.begin() + static_cast<long>(ops[i].first + ops[i].second));
    return out;
  }
};

using Insn = std::pair<uint16_t, uint32_t>;  // code, k
using Jump = std::pair<uint8_t, uint8_t>;    // jt, jf

struct Packed {
  Packer<Insn> insns;
  Packer<Jump> jumps;
  std::vector<std::string> programs{"{0, 0, 0, 0}"};  // 0: the empty program
  std::vector<std::pair<nsrun::BpfProgram, unsigned>> seen;

  // The program's index in programs[]; the same index for an identical
  // program (several keys give the same filter: e.g. every `--seccomp
  // none` variant off the Landlock rung is empty). nullopt when it cannot
  // be packed, or when unpacking does not give it back exactly.
  std::optional<unsigned> add(const nsrun::BpfProgram& program) {
    if (program.empty()) return 0u;
    for (const auto& [p, id] : seen)
      if (p.size() == program.size() && std::equal(p.begin(), p.end(), program.begin(), [](const sock_filter& a, const sock_filter& b) {
            return a.code == b.code && a.jt == b.jt && a.jf == b.jf && a.k == b.k;
          }))
        return id;
    std::vector<Insn> is;
    std::vector<Jump> js;
    for (const sock_filter& f : program) {
      is.emplace_back(f.code, f.k);
      if (nsrun::packed::conditional_jump(f.code))
        js.emplace_back(f.jt, f.jf);
      else if (f.jt != 0 || f.jf != 0)
        return std::nullopt;  // the packing assumes zeros there
    }
    const auto ir = insns.add(is);
    const auto jr = jumps.add(js);
    if (insns.unpack(ir) != is || jumps.unpack(jr) != js) return std::nullopt;
    const unsigned id = static_cast<unsigned>(programs.size());
    programs.push_back(fmt::format("{{{}, {}, {}, {}}}", ir.first, ir.second, jr.first, jr.second));
    seen.emplace_back(program, id);
    return id;
  }

  // Everything must fit the 16-bit fields of seccomp/packed.hpp.
  bool fits() const {
    auto ok = [](std::size_t n) { return n <= 0xffff; };
    for (const auto& [at, n] : insns.ops)
      if (!ok(at) || !ok(n)) return false;
    for (const auto& [at, n] : jumps.ops)
      if (!ok(at) || !ok(n)) return false;
    return ok(insns.ops.size()) && ok(jumps.ops.size()) && programs.size() <= 0xff;
  }
};

std::optional<unsigned> emit(Packed& packed, const std::string& name, const nsrun::FilterSpec& spec) {
  auto program = nsrun::compile_spec(spec);
  if (!program) {
    fmt::print(stderr, "gen-seccomp: {}: {}\n", name, program.error().message());
    return std::nullopt;
  }
  auto id = packed.add(*program);
  if (!id) fmt::print(stderr, "gen-seccomp: {}: the program does not pack\n", name);
  return id;
}

template <class T, class F>
std::string array(std::string_view decl, const std::vector<T>& items, F text) {
  std::string out = fmt::format("{}[] = {{\n", decl);
  for (std::size_t i = 0; i < items.size(); ++i) out += fmt::format("{}{},", i % 8 == 0 ? "    " : " ", text(items[i])) + (i % 8 == 7 ? "\n" : "");
  return out + "\n};\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "usage: gen-seccomp OUTPUT.cpp\n");
    return 2;
  }
  Packed packed;
  std::vector<unsigned> table, notify_table, notify_watch_table, notify_guard_table;
  std::map<int, std::string> names;
  for (unsigned i = 0; i < nsrun::FilterKey::variants; ++i) {
    auto id = emit(packed, fmt::format("filter_{}", i), nsrun::filter_spec(nsrun::FilterKey::from_index(i)));
    if (!id) return 1;
    table.push_back(*id);
  }
  for (unsigned i = 0; i < nsrun::FilterKey::variants; ++i) {
    const auto spec = nsrun::filter_spec(nsrun::FilterKey::from_index(i));
    for (const auto& rule : spec.rules) names.emplace(nsrun::syscall_number(std::string(rule.syscall)), rule.syscall);
    auto id = emit(packed, fmt::format("notify_{}", i), nsrun::notify_spec(spec));
    if (!id) return 1;
    notify_table.push_back(*id);
  }
  auto no_userns = emit(packed, "no_userns", nsrun::no_userns_spec());
  if (!no_userns) return 1;
  // --watch-writes (seccomp/writes.hpp): alone (no notifying variant), or
  // joined to each notifying variant (one listener per task).
  const auto watch_spec = nsrun::watch_writes_spec();
  for (const auto& rule : watch_spec.rules) names.emplace(nsrun::syscall_number(std::string(rule.syscall)), rule.syscall);
  auto watch = emit(packed, "watch_writes", watch_spec);
  if (!watch) return 1;
  for (unsigned i = 0; i < nsrun::FilterKey::variants; ++i) {
    const auto spec = nsrun::notify_spec(nsrun::filter_spec(nsrun::FilterKey::from_index(i)));
    auto id = emit(packed, fmt::format("notify_watch_{}", i), nsrun::notify_watch_spec(spec));
    if (!id) return 1;
    notify_watch_table.push_back(*id);
  }
  // The protect guard (seccomp/writes.hpp): renames joined to each
  // notifying variant, without --watch-writes.
  for (const auto& rule : nsrun::protect_guard_spec().rules)
    names.emplace(nsrun::syscall_number(std::string(rule.syscall)), rule.syscall);
  for (unsigned i = 0; i < nsrun::FilterKey::variants; ++i) {
    const auto spec = nsrun::notify_spec(nsrun::filter_spec(nsrun::FilterKey::from_index(i)));
    auto id = emit(packed, fmt::format("notify_guard_{}", i), nsrun::notify_guard_spec(spec));
    if (!id) return 1;
    notify_guard_table.push_back(*id);
  }
  if (!packed.fits()) {
    fmt::print(stderr, "gen-seccomp: the packed programs outgrow seccomp/packed.hpp's 16-bit fields\n");
    return 1;
  }

  auto op = [](const std::pair<std::size_t, std::size_t>& o) { return fmt::format("{{{}, {}}}", o.first, o.second); };
  auto number = [](unsigned n) { return fmt::format("{}", n); };
  std::string out =
      "// Generated by tools/gen-seccomp.cpp when nsrun was built. Do not edit.\n"
      "// The layout: seccomp/packed.hpp.\n"
      "#include \"seccomp/packed.hpp\"\n#include \"seccomp/precompiled.hpp\"\n\n#include <utility>\n\n"
      "namespace nsrun::packed {\n\n";
  out += array("const uint16_t insn_code", packed.insns.pool, [](const Insn& i) { return fmt::format("0x{:02x}", i.first); });
  out += array("const uint32_t insn_k", packed.insns.pool, [](const Insn& i) { return fmt::format("0x{:x}", i.second); });
  out += array("const Op insn_op", packed.insns.ops, op);
  out += array("const Jump jump", packed.jumps.pool, [](const Jump& j) { return fmt::format("{{{}, {}}}", j.first, j.second); });
  out += array("const Op jump_op", packed.jumps.ops, op);
  out += array("const Program programs", packed.programs, [](const std::string& s) { return s; });
  out += fmt::format("const unsigned program_count = {};\n", packed.programs.size());
  out += array("const uint8_t filters", table, number);
  out += array("const uint8_t notify_filters", notify_table, number);
  out += array("const uint8_t notify_watch_filters", notify_watch_table, number);
  out += array("const uint8_t notify_guard_filters", notify_guard_table, number);
  out += fmt::format("const uint8_t no_userns = {};\nconst uint8_t watch_writes = {};\n\n", *no_userns, *watch);
  out += "}  // namespace nsrun::packed\n\nnamespace nsrun {\n\nnamespace {\n\n";
  // constexpr: made at compile time. As a plain const array of pairs g++
  // built it at every start of nsrun (a string_view constructor per name,
  // 112 of them, before main).
  out += "constexpr std::pair<int, std::string_view> syscall_names[] = {\n";
  for (const auto& [nr, n] : names) out += fmt::format("    {{{}, \"{}\"}},\n", nr, n);
  out +=
      "};\n\n}  // namespace\n\n"
      "std::string_view precompiled_syscall_name(int nr) {\n"
      "  for (const auto& [n, name] : syscall_names)\n"
      "    if (n == nr) return name;\n"
      "  return {};\n"
      "}\n\n"
      "}  // namespace nsrun\n";

  std::FILE* f = std::fopen(argv[1], "w");
  if (f == nullptr || std::fputs(out.c_str(), f) < 0 || std::fclose(f) != 0) {
    fmt::print(stderr, "gen-seccomp: cannot write {}\n", argv[1]);
    return 1;
  }
  return 0;
}
