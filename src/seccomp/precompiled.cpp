#include "seccomp/precompiled.hpp"

#include <cerrno>

#include "seccomp/packed.hpp"

namespace nsrun {

namespace {

Error damaged(unsigned id) {
  return sys_error(Operation::seccomp_load, "", EINVAL,
                   "precompiled program " + std::to_string(id) + " does not unpack (a build error)");
}

// The number of instructions program `id` unpacks to.
std::size_t unpacked_size(const packed::Program& p) {
  std::size_t size = 0;
  for (unsigned i = 0; i < p.insn_op_count; ++i) size += packed::insn_op[p.insn_ops + i].count;
  return size;
}

// seccomp/packed.hpp: the instructions out of their pool, then each
// conditional jump's (jt, jf) in order. Every count must come out exact.
Result<BpfProgram> unpack(unsigned id) {
  if (id >= packed::program_count) return fail(damaged(id));
  const packed::Program& p = packed::programs[id];
  const std::size_t size = unpacked_size(p);
  // Sized once and written in place: this runs at every launch, once per
  // program loaded (seccomp_test.cpp compares every program it gives with
  // libseccomp's).
  BpfProgram out(size);
  sock_filter* const insns = out.data();
  std::size_t pc = 0;
  for (unsigned i = 0; i < p.insn_op_count; ++i) {
    const packed::Op op = packed::insn_op[p.insn_ops + i];
    for (unsigned at = op.at; at < op.at + op.count; ++at)
      insns[pc++] = sock_filter{packed::insn_code[at], 0, 0, packed::insn_k[at]};
  }
  pc = 0;
  for (unsigned i = 0; i < p.jump_op_count; ++i) {
    const packed::Op op = packed::jump_op[p.jump_ops + i];
    for (unsigned at = op.at; at < op.at + op.count; ++at) {
      while (pc < size && !packed::conditional_jump(insns[pc].code)) ++pc;
      if (pc == size) return fail(damaged(id));
      insns[pc].jt = packed::jump[at].jt;
      insns[pc].jf = packed::jump[at].jf;
      ++pc;
    }
  }
  while (pc < size && !packed::conditional_jump(insns[pc].code)) ++pc;
  if (pc != size) return fail(damaged(id));
  return out;
}

}  // namespace

Result<BpfProgram> precompiled_filter(const FilterKey& key) { return unpack(packed::filters[key.index()]); }
std::size_t precompiled_filter_size(const FilterKey& key) {
  const unsigned id = packed::filters[key.index()];
  return id < packed::program_count ? unpacked_size(packed::programs[id]) : 0;
}
Result<BpfProgram> precompiled_notify_filter(const FilterKey& key) { return unpack(packed::notify_filters[key.index()]); }
Result<BpfProgram> precompiled_notify_watch_filter(const FilterKey& key) {
  return unpack(packed::notify_watch_filters[key.index()]);
}
Result<BpfProgram> precompiled_notify_guard_filter(const FilterKey& key) {
  return unpack(packed::notify_guard_filters[key.index()]);
}
Result<BpfProgram> precompiled_no_userns_filter() { return unpack(packed::no_userns); }
Result<BpfProgram> precompiled_watch_writes_filter() { return unpack(packed::watch_writes); }

}  // namespace nsrun
