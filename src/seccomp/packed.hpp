// How the precompiled seccomp programs are stored, for the binary's size: the
// variants differ in a few rules each, but libseccomp's binary tree moves
// most jump offsets when one rule comes or goes, so storing each program
// whole cost about 300 KB of the static binary. tools/gen-seccomp.cpp
// splits every program into two streams and stores each as copies out of a
// shared pool (greedy LZ77 with the pool as the dictionary):
//   - the instructions without their jump offsets (code and k), which the
//     variants share in long runs;
//   - the (jt, jf) pairs of the conditional jumps, in program order.
// seccomp/precompiled.cpp puts them back together. The result is checked
// byte for byte against libseccomp's output for every key by the unit
// tests ("the programs compiled at build time ...").
#pragma once

#include <linux/filter.h>

#include <cstdint>

namespace nsrun::packed {

// Copy pool[at, at + count) to the output.
struct Op {
  uint16_t at;
  uint16_t count;
};

struct Jump {
  uint8_t jt;
  uint8_t jf;
};

// A program: its instruction ops, then its jump ops.
struct Program {
  uint16_t insn_ops;   // first index into insn_op[]
  uint16_t insn_op_count;
  uint16_t jump_ops;   // first index into jump_op[]
  uint16_t jump_op_count;
};

// The instructions whose jt and jf are jump offsets: every BPF_JMP but the
// unconditional BPF_JA (whose offset is k). Everything else keeps jt = jf = 0
// in what libseccomp emits, which the unit test's byte comparison checks.
constexpr bool conditional_jump(uint16_t code) { return BPF_CLASS(code) == BPF_JMP && BPF_OP(code) != BPF_JA; }

// Written by tools/gen-seccomp.cpp (seccomp_programs.cpp).
extern const uint16_t insn_code[];
extern const uint32_t insn_k[];
extern const Op insn_op[];
extern const Jump jump[];
extern const Op jump_op[];
extern const Program programs[];  // programs[0] is the empty program
extern const unsigned program_count;
// By FilterKey::index(): an index into programs[].
extern const uint8_t filters[];
extern const uint8_t notify_filters[];
extern const uint8_t notify_watch_filters[];
extern const uint8_t notify_guard_filters[];
extern const uint8_t no_userns;
extern const uint8_t watch_writes;

}  // namespace nsrun::packed
