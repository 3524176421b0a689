#include "policy/policy_json.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>

#include <fmt/core.h>

#include "sys/fd.hpp"
#include "sys/io.hpp"

namespace nsrun {

namespace {

using json::Value;

// ---- writing ----

Value strings(const std::vector<std::string>& items) {
  Value out = Value::array();
  for (const auto& s : items) out.push_back(s);
  return out;
}

Value ints(const std::vector<int>& items) {
  // Built in place: g++ 12 warns (falsely) about a moved temporary here.
  Value::Array out;
  for (int i : items) out.emplace_back(i);
  return Value::array(std::move(out));
}

// ---- reading ----

Error field_error(std::string_view field, std::string_view why) {
  return usage_error(fmt::format("policy field '{}'", field), why);
}

Error type_error(std::string_view field, std::string_view want, const Value& got) {
  return field_error(field, fmt::format("expected {}, got {}", want, got.type_name()));
}

// Strings become paths, names, arguments and environment entries, where a
// NUL (\u0000) would cut them at the system call: refused here already, and
// again by validate() for every front end. File contents (`data`) are the
// one exception: any byte may be in a file.
Result<std::string> get_string(std::string_view field, const Value& v, bool any_byte = false) {
  if (!v.is_string()) return fail(type_error(field, "string", v));
  if (!any_byte && v.as_string().find('\0') != std::string::npos)
    return fail(field_error(field, "contains a NUL byte (\\u0000)"));
  return v.as_string();
}

Result<bool> get_bool(std::string_view field, const Value& v) {
  if (!v.is_bool()) return fail(type_error(field, "boolean", v));
  return v.as_bool();
}

Result<int64_t> get_int(std::string_view field, const Value& v, int64_t lo, int64_t hi) {
  if (!v.is_int()) return fail(type_error(field, "integer", v));
  if (v.as_int() < lo || v.as_int() > hi)
    return fail(field_error(field, fmt::format("{} is out of range [{}, {}]", v.as_int(), lo, hi)));
  return v.as_int();
}

Result<std::vector<std::string>> get_strings(std::string_view field, const Value& v) {
  if (!v.is_array()) return fail(type_error(field, "array of strings", v));
  std::vector<std::string> out;
  for (const Value& item : v.as_array()) {
    auto s = get_string(field, item);
    if (!s) return fail(s.error());
    out.push_back(std::move(*s));
  }
  return out;
}

Result<std::vector<int>> get_ints(std::string_view field, const Value& v) {
  if (!v.is_array()) return fail(type_error(field, "array of integers", v));
  std::vector<int> out;
  for (const Value& item : v.as_array()) {
    auto i = get_int(field, item, 0, std::numeric_limits<int>::max());
    if (!i) return fail(i.error());
    out.push_back(static_cast<int>(*i));
  }
  return out;
}

template <class E>
Result<E> get_enum(std::string_view field, const Value& v, std::optional<E> (*parse)(std::string_view)) {
  auto s = get_string(field, v);
  if (!s) return fail(s.error());
  auto e = parse(*s);
  if (!e) return fail(field_error(field, fmt::format("unknown value '{}'", *s)));
  return *e;
}

Result<uint32_t> get_perms(std::string_view field, const Value& v) {
  auto s = get_string(field, v);
  if (!s) return fail(s.error());
  char* end = nullptr;
  unsigned long mode = std::strtoul(s->c_str(), &end, 8);
  if (s->empty() || *end != '\0' || mode > 07777)
    return fail(field_error(field, fmt::format("'{}' is not an octal mode", *s)));
  return static_cast<uint32_t>(mode);
}

// ---- one key: how it is read and written ----

template <class T>
using Reader = std::function<Result<void>(const Value&, T&, const std::string&)>;
template <class T>
using Writer = std::function<std::optional<Value>(const T&)>;

template <class T>
struct Codec {
  Reader<T> read;
  Writer<T> write;
};

// A key of an object inside the Policy (a mount, an env entry...).
template <class T>
struct Field {
  Field(std::string_view k, Codec<T> c) : key(k), read(std::move(c.read)), write(std::move(c.write)) {}
  std::string_view key;
  Reader<T> read;
  Writer<T> write;
};

// Whether a key whose value is the member's default is written.
enum class Omit { never, when_empty };

template <class T, class M, class F>
Writer<T> writer(M T::*member, Omit omit, F as_value) {
  return [member, omit, as_value](const T& t) -> std::optional<Value> {
    if (omit == Omit::when_empty && t.*member == M{}) return std::nullopt;
    return as_value(t.*member);
  };
}

// An object: each key read with its row; an unknown key, a wrong type or
// a bad value is an error naming the key's full path.
template <class T, class Row>
Result<void> read_object(const Value& v, T& out, const std::string& where, std::span<const Row> rows) {
  if (!v.is_object()) return fail(type_error(where.empty() ? "(top)" : where, "object", v));
  for (const auto& [key, value] : v.as_object()) {
    const std::string path = where.empty() ? key : fmt::format("{}.{}", where, key);
    auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.read && r.key == key; });
    if (it == rows.end()) return fail(field_error(path, "unknown field"));
    if (auto r = it->read(value, out, path); !r) return r;
  }
  return {};
}

template <class T, class Row>
Value write_object(const T& t, std::span<const Row> rows) {
  Value out = Value::object();
  for (const Row& r : rows)
    if (r.write)
      if (auto v = r.write(t)) out.set(r.key, std::move(*v));
  return out;
}

template <class T>
Codec<T> string_field(std::string T::*member, Omit omit = Omit::never, bool any_byte = false) {
  return {[member, any_byte](const Value& v, T& out, const std::string& f) -> Result<void> {
            auto s = get_string(f, v, any_byte);
            if (!s) return fail(s.error());
            out.*member = std::move(*s);
            return {};
          },
          writer(member, omit, [](const std::string& s) { return Value(s); })};
}

template <class T>
Codec<T> strings_field(std::vector<std::string> T::*member, Omit omit = Omit::never) {
  return {[member](const Value& v, T& out, const std::string& f) -> Result<void> {
            auto s = get_strings(f, v);
            if (!s) return fail(s.error());
            out.*member = std::move(*s);
            return {};
          },
          writer(member, omit, strings)};
}

template <class T>
Codec<T> bool_field(bool T::*member, Omit omit = Omit::never) {
  return {[member](const Value& v, T& out, const std::string& f) -> Result<void> {
            auto b = get_bool(f, v);
            if (!b) return fail(b.error());
            out.*member = *b;
            return {};
          },
          writer(member, omit, [](bool b) { return Value(b); })};
}

template <class T, class E>
Codec<T> enum_field(E T::*member, std::optional<E> (*parse)(std::string_view)) {
  return {[member, parse](const Value& v, T& out, const std::string& f) -> Result<void> {
            auto e = get_enum<E>(f, v, parse);
            if (!e) return fail(e.error());
            out.*member = *e;
            return {};
          },
          writer(member, Omit::never, [](E e) { return Value(name(e)); })};
}

// An id or a descriptor; null when unset.
template <class T, class I>
Codec<T> id_field(std::optional<I> T::*member, Omit omit = Omit::never) {
  return {[member](const Value& v, T& out, const std::string& f) -> Result<void> {
            if (v.is_null()) {
              out.*member = std::nullopt;
              return {};
            }
            // An id is at most 2^32-2 (-1 means "none"), a descriptor at most
            // INT_MAX: above, the cast would make it negative.
            constexpr int64_t hi =
                std::min<int64_t>(std::numeric_limits<uint32_t>::max() - 1, std::numeric_limits<I>::max());
            auto i = get_int(f, v, 0, hi);
            if (!i) return fail(i.error());
            out.*member = static_cast<I>(*i);
            return {};
          },
          writer(member, omit, [](const std::optional<I>& i) { return i ? Value(*i) : Value(); })};
}

// An array of objects, each read with `item` and written with `rows`.
template <class T, class E>
Codec<T> list_field(std::vector<E> T::*member, Result<E> (*item)(const Value&, const std::string&),
                    std::span<const Field<E>> rows) {
  return {[member, item](const Value& v, T& out, const std::string& f) -> Result<void> {
            if (!v.is_array()) return fail(type_error(f, "array", v));
            std::vector<E> items;
            for (std::size_t i = 0; i < v.as_array().size(); ++i) {
              auto e = item(v.as_array()[i], fmt::format("{}[{}]", f, i));
              if (!e) return fail(e.error());
              items.push_back(std::move(*e));
            }
            out.*member = std::move(items);
            return {};
          },
          writer(member, Omit::never, [rows](const std::vector<E>& items) {
            Value out = Value::array();
            for (const E& e : items) out.push_back(write_object(e, rows));
            return out;
          })};
}

// A member that is an object of its own.
template <class T, class M>
Codec<T> object_field(M T::*member, std::span<const Field<M>> rows) {
  return {[member, rows](const Value& v, T& out, const std::string& f) { return read_object(v, out.*member, f, rows); },
          [member, rows](const T& t) -> std::optional<Value> { return write_object(t.*member, rows); }};
}

// A key of M, kept in a member of T (the egress rules inside the Policy).
template <class T, class M>
Codec<T> inside(M T::*member, Codec<M> c) {
  return {[member, read = std::move(c.read)](const Value& v, T& out, const std::string& f) {
            return read(v, out.*member, f);
          },
          [member, write = std::move(c.write)](const T& t) { return write(t.*member); }};
}

// ---- the objects inside the Policy ----

std::span<const Field<MountOp>> mount_fields() {
  static const Field<MountOp> rows[] = {
      {"kind", enum_field(&MountOp::kind, parse_mount_kind)},
      {"source", string_field(&MountOp::source, Omit::when_empty)},
      {"dest", string_field(&MountOp::dest)},
      {"optional", bool_field(&MountOp::optional, Omit::when_empty)},
      {"perms", {[](const Value& v, MountOp& m, const std::string& f) -> Result<void> {
                   auto p = get_perms(f, v);
                   if (!p) return fail(p.error());
                   m.perms = *p;
                   return {};
                 },
                 writer(&MountOp::perms, Omit::when_empty,
                        [](const std::optional<uint32_t>& p) { return Value(fmt::format("{:04o}", *p)); })}},
      {"size", {[](const Value& v, MountOp& m, const std::string& f) -> Result<void> {
                  auto s = get_int(f, v, 0, std::numeric_limits<int64_t>::max());
                  if (!s) return fail(s.error());
                  m.size = static_cast<uint64_t>(*s);
                  return {};
                },
                writer(&MountOp::size, Omit::when_empty, [](const std::optional<uint64_t>& s) { return Value(*s); })}},
      {"data", string_field(&MountOp::data, Omit::when_empty, true)},
      // Overlays and --bind-fd: without these a policy read back would mount
      // something else than what was written (found by tests/fuzz/bwrap_args).
      {"source_fd", id_field(&MountOp::source_fd, Omit::when_empty)},
      {"layers", strings_field(&MountOp::layers, Omit::when_empty)},
      {"workdir", string_field(&MountOp::workdir, Omit::when_empty)},
  };
  return rows;
}

std::span<const Field<EnvOp>> env_fields() {
  static const Field<EnvOp> rows[] = {
      {"op", enum_field(&EnvOp::kind, parse_env_kind)},
      {"name", string_field(&EnvOp::name)},
      {"value", {string_field(&EnvOp::value).read, [](const EnvOp& e) -> std::optional<Value> {
                   if (e.kind != EnvOp::Kind::set) return std::nullopt;
                   return Value(e.value);
                 }}},
  };
  return rows;
}

std::span<const Field<SettingsCopy>> settings_copy_fields() {
  static const Field<SettingsCopy> rows[] = {
      {"path", string_field(&SettingsCopy::path)},
      {"text", string_field(&SettingsCopy::text)},
  };
  return rows;
}

std::span<const Field<Namespaces>> namespace_fields() {
  static const std::vector<Field<Namespaces>> rows = [] {
    std::vector<Field<Namespaces>> out;
    for (const auto& k : namespace_kinds)
      if (k.in_policy) out.emplace_back(k.name, bool_field(namespace_field(k.clone_flag)));
    return out;
  }();
  return rows;
}

// "network" as an object, for the egress proxy.
std::span<const Field<Policy>> network_fields() {
  static const Field<Policy> rows[] = {
      {"mode", enum_field(&Policy::network, parse_network)},
      {"allow", inside(&Policy::egress, strings_field(&EgressRules::allow))},
      {"deny", inside(&Policy::egress, strings_field(&EgressRules::deny))},
      {"resolve", inside(&Policy::egress, strings_field(&EgressRules::resolve))},
      {"log", inside(&Policy::egress, string_field(&EgressRules::log))},
  };
  return rows;
}

Result<MountOp> mount_from_json(const Value& v, const std::string& where) {
  MountOp m;
  if (v.is_object() && v.find("kind") == nullptr) return fail(field_error(where, "missing field 'kind'"));
  if (auto r = read_object(v, m, where, mount_fields()); !r) return fail(r.error());
  return m;
}

Result<EnvOp> env_from_json(const Value& v, const std::string& where) {
  EnvOp e;
  if (auto r = read_object(v, e, where, env_fields()); !r) return fail(r.error());
  // A value on unset, allow or deny would be dropped on the way back out
  // (written for set only), and means the entry was misread.
  if (e.kind != EnvOp::Kind::set && v.find("value") != nullptr)
    return fail(field_error(fmt::format("{}.value", where), fmt::format("only for op set, not {}", name(e.kind))));
  return e;
}

Result<SettingsCopy> settings_copy_from_json(const Value& v, const std::string& where) {
  SettingsCopy c;
  if (auto r = read_object(v, c, where, settings_copy_fields()); !r) return fail(r.error());
  return c;
}

// ---- the Policy's own keys ----

PolicyField row(std::string_view key, Codec<Policy> c, std::string_view members = {}) {
  return {key, members.empty() ? key : members, std::move(c.read), std::move(c.write), {}};
}

PolicyField unwritten(std::string_view member, std::string_view why) { return {{}, member, {}, {}, why}; }

}  // namespace

// ---------------------------------------------------------------------------
// THE POLICY TABLE. To add a Policy member: one row here, in the order
// `nsrun policy` prints its key, with a codec for the member's type
// (string_field, strings_field, bool_field, enum_field, id_field,
// list_field, object_field, or a {read, write} pair of its own); or an
// unwritten() row saying why the JSON leaves it out. A command-line
// option that sets exactly this member names the key as its `json`
// (src/cli/options.cpp); tests/unit/policy_fields_test.cpp checks both.
// ---------------------------------------------------------------------------
std::span<const PolicyField> policy_fields() {
  static const PolicyField rows[] = {
      row("mode", enum_field(&Policy::mode, parse_mode)),
      row("workspace", string_field(&Policy::workspace)),
      row("writable", strings_field(&Policy::writable)),
      row("preset", bool_field(&Policy::preset)),
      row("follow_symlinks", bool_field(&Policy::follow_symlinks)),
      row("mounts", list_field(&Policy::mounts, mount_from_json, mount_fields())),
      row("namespaces", object_field(&Policy::ns, namespace_fields()), "ns"),
      row("uid", id_field(&Policy::uid)),
      row("gid", id_field(&Policy::gid)),
      row("hostname", string_field(&Policy::hostname)),
      row("proc", enum_field(&Policy::proc, parse_proc_mode)),
      row("host_backend", string_field(&Policy::host_backend)),
      row("backend", enum_field(&Policy::backend, parse_backend)),
      // A mode name, or {mode, allow, deny, resolve, log} for the egress proxy.
      row("network",
          {[](const Value& v, Policy& p, const std::string& f) -> Result<void> {
             if (v.is_string()) return enum_field(&Policy::network, parse_network).read(v, p, f);
             return read_object(v, p, f, network_fields());
           },
           [](const Policy& p) -> std::optional<Value> {
             if (p.network != Network::proxy && p.egress == EgressRules{}) return Value(name(p.network));
             return write_object(p, network_fields());
           }},
          "network egress"),
      row("seccomp", enum_field(&Policy::seccomp, parse_seccomp_mode)),
      row("allow_nested_userns", bool_field(&Policy::allow_nested_userns)),
      row("offline_env", bool_field(&Policy::offline_env)),
      row("unix_sockets", enum_field(&Policy::unix_sockets, parse_unix_sockets)),
      row("hidden_sockets", strings_field(&Policy::hidden_sockets)),
      row("allow_sockets", strings_field(&Policy::allow_sockets)),
      row("protect_defaults", bool_field(&Policy::protect_defaults)),
      row("protect", strings_field(&Policy::protect)),
      row("unprotect", strings_field(&Policy::unprotect)),
      row("hide_defaults", bool_field(&Policy::hide_defaults)),
      row("allow_read", strings_field(&Policy::allow_read)),
      row("hidden_paths", strings_field(&Policy::hidden_paths)),
      row("shown_in_hidden", strings_field(&Policy::shown_in_hidden)),
      row("settings_copy", bool_field(&Policy::settings_copy)),
      row("settings_copies", list_field(&Policy::settings_copies, settings_copy_from_json, settings_copy_fields())),
      row("cap_add", strings_field(&Policy::cap_add)),
      row("cap_grant_inheritable", bool_field(&Policy::cap_grant_inheritable)),
      row("clearenv", bool_field(&Policy::clearenv)),
      row("env", list_field(&Policy::env, env_from_json, env_fields())),
      row("chdir", string_field(&Policy::chdir)),
      row("as_pid_1", bool_field(&Policy::as_pid_1)),
      row("die_with_parent", bool_field(&Policy::die_with_parent)),
      // Unset: only when stdin is not a terminal.
      row("new_session",
          {[](const Value& v, Policy& p, const std::string& f) -> Result<void> {
             if (v.is_null()) {
               p.new_session = std::nullopt;
               return {};
             }
             auto b = get_bool(f, v);
             if (!b) return fail(b.error());
             p.new_session = *b;
             return {};
           },
           writer(&Policy::new_session, Omit::never,
                  [](const std::optional<bool>& b) { return b ? Value(*b) : Value(); })}),
      row("pass_fds", {[](const Value& v, Policy& p, const std::string& f) -> Result<void> {
                         auto i = get_ints(f, v);
                         if (!i) return fail(i.error());
                         p.pass_fds = std::move(*i);
                         return {};
                       },
                       writer(&Policy::pass_fds, Omit::never, ints)}),
      row("limits", {[](const Value& v, Policy& p, const std::string& f) -> Result<void> {
                       auto l = limits_from_json(v, p.limits, f);
                       if (!l) return fail(l.error());
                       p.limits = std::move(*l);
                       return {};
                     },
                     [](const Policy& p) -> std::optional<Value> { return to_json(p.limits); }}),
      row("verdict", bool_field(&Policy::verdict)),
      row("watch_writes", bool_field(&Policy::watch_writes)),
      row("report_path", string_field(&Policy::report_path)),
      row("report_fd", id_field(&Policy::report_fd)),
      row("argv", strings_field(&Policy::argv)),
      row("argv0", string_field(&Policy::argv0)),
      row("workspace_mode", enum_field(&Policy::workspace_mode, parse_workspace_mode)),
      // Written only when named: the default reads back as the default.
      row("home",
          {[](const Value& v, Policy& p, const std::string& f) -> Result<void> {
             auto r = enum_field(&Policy::home, parse_home_mode).read(v, p, f);
             if (r) p.home_given = true;
             return r;
           },
           [](const Policy& p) -> std::optional<Value> {
             if (!p.home_given) return std::nullopt;
             return Value(name(p.home));
           }},
          "home home_given"),
      row("cow_dir", string_field(&Policy::cow_dir)),
      row("home_layer", string_field(&Policy::home_layer)),
      row("run_id", string_field(&Policy::run_id)),

      // Members the JSON leaves out.
      unwritten("seccomp_fds", "the bwrap dialect's descriptors of compiled programs"),
      unwritten("info_fd", "the bwrap dialect's descriptor"),
      unwritten("json_status_fd", "the bwrap dialect's descriptor"),
      unwritten("block_fd", "the bwrap dialect's descriptor"),
      unwritten("userns_block_fd", "the bwrap dialect's descriptor"),
      unwritten("lock_files", "the bwrap dialect's alone"),
      unwritten("disable_userns", "the bwrap dialect's alone"),
      unwritten("assert_userns_disabled", "the bwrap dialect's alone"),
      unwritten("userns_fd", "an open namespace: its number means nothing outside this process"),
      unwritten("userns2_fd", "an open namespace: its number means nothing outside this process"),
      unwritten("pidns_fd", "an open namespace: its number means nothing outside this process"),
      unwritten("layers", "resolved by the front end and the launch, never given"),
  };
  return rows;
}

const PolicyField* policy_field(std::string_view key) {
  for (const PolicyField& f : policy_fields())
    if (!f.key.empty() && f.key == key) return &f;
  return nullptr;
}

json::Value to_json(const Policy& p) { return write_object(p, policy_fields()); }

Result<Policy> from_json(const json::Value& doc, Policy base) {
  if (auto r = read_object(doc, base, "", policy_fields()); !r) return fail(r.error());
  return base;
}

Result<Policy> load_policy_file(const std::string& path, Policy base) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return fail(usage_error("--policy", fmt::format("{}: {}", path, std::strerror(errno))));
  auto text = read_all(fd.get(), "--policy", path, max_input_bytes);
  if (!text && text.error().err == EFBIG)
    return fail(usage_error("--policy", fmt::format("{}: larger than {} bytes", path, max_input_bytes)));
  if (!text) return fail(usage_error("--policy", fmt::format("{}: {}", path, std::strerror(text.error().err))));
  auto doc = json::parse(*text);
  if (!doc) {
    Error e = doc.error();
    e.step = fmt::format("--policy {}", path);
    return fail(e);
  }
  auto policy = from_json(*doc, std::move(base));
  if (!policy) {
    Error e = policy.error();
    e.step = fmt::format("--policy {}: {}", path, e.step);
    return fail(e);
  }
  return policy;
}

}  // namespace nsrun
