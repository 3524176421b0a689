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
  Value out = Value::array();
  for (int i : items) out.push_back(i);
  return out;
}

Value mount_to_json(const MountOp& m) {
  Value out = Value::object();
  out.set("kind", name(m.kind));
  if (!m.source.empty()) out.set("source", m.source);
  out.set("dest", m.dest);
  if (m.optional) out.set("optional", true);
  if (m.perms) out.set("perms", fmt::format("{:04o}", *m.perms));
  if (m.size) out.set("size", *m.size);
  if (!m.data.empty()) out.set("data", m.data);
  // Overlays and --bind-fd: without these a policy read back would mount
  // something else than what was written (found by tests/fuzz/bwrap_args).
  if (m.source_fd) out.set("source_fd", *m.source_fd);
  if (!m.layers.empty()) out.set("layers", strings(m.layers));
  if (!m.workdir.empty()) out.set("workdir", m.workdir);
  return out;
}

Value env_to_json(const EnvOp& e) {
  Value out = Value::object();
  out.set("op", name(e.kind));
  out.set("name", e.name);
  if (e.kind == EnvOp::Kind::set) out.set("value", e.value);
  return out;
}

Value settings_copy_to_json(const SettingsCopy& c) {
  Value out = Value::object();
  out.set("path", c.path);
  out.set("text", c.text);
  return out;
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

// Each object is read with a table of field readers: an unknown field, a
// wrong type or a bad value is an error naming the field's full path.
template <class T>
using Readers = std::vector<std::pair<std::string_view, std::function<Result<void>(const Value&, T&, const std::string&)>>>;

template <class T>
Result<void> read_object(const Value& v, T& out, const std::string& where, const Readers<T>& readers) {
  if (!v.is_object()) return fail(type_error(where.empty() ? "(top)" : where, "object", v));
  for (const auto& [key, value] : v.as_object()) {
    const std::string path = where.empty() ? key : fmt::format("{}.{}", where, key);
    auto it = std::find_if(readers.begin(), readers.end(), [&](const auto& r) { return r.first == key; });
    if (it == readers.end()) return fail(field_error(path, "unknown field"));
    if (auto r = it->second(value, out, path); !r) return r;
  }
  return {};
}

// Small adapters from "how to read a type" to a reader that stores it.
template <class T, class M>
auto string_into(M T::*member) {
  return [member](const Value& v, T& out, const std::string& f) -> Result<void> {
    auto s = get_string(f, v);
    if (!s) return fail(s.error());
    out.*member = std::move(*s);
    return {};
  };
}

template <class T>
auto strings_into(std::vector<std::string> T::*member) {
  return [member](const Value& v, T& out, const std::string& f) -> Result<void> {
    auto s = get_strings(f, v);
    if (!s) return fail(s.error());
    out.*member = std::move(*s);
    return {};
  };
}

template <class T>
auto bool_into(bool T::*member) {
  return [member](const Value& v, T& out, const std::string& f) -> Result<void> {
    auto b = get_bool(f, v);
    if (!b) return fail(b.error());
    out.*member = *b;
    return {};
  };
}

template <class T, class E>
auto enum_into(E T::*member, std::optional<E> (*parse)(std::string_view)) {
  return [member, parse](const Value& v, T& out, const std::string& f) -> Result<void> {
    auto e = get_enum<E>(f, v, parse);
    if (!e) return fail(e.error());
    out.*member = *e;
    return {};
  };
}

template <class T, class I>
auto optional_id_into(std::optional<I> T::*member) {
  return [member](const Value& v, T& out, const std::string& f) -> Result<void> {
    if (v.is_null()) {
      out.*member = std::nullopt;
      return {};
    }
    // An id is at most 2^32-2 (-1 means "none"), a descriptor at most
    // INT_MAX: above, the cast would make it negative.
    constexpr int64_t hi = std::min<int64_t>(std::numeric_limits<uint32_t>::max() - 1, std::numeric_limits<I>::max());
    auto i = get_int(f, v, 0, hi);
    if (!i) return fail(i.error());
    out.*member = static_cast<I>(*i);
    return {};
  };
}

Result<MountOp> mount_from_json(const Value& v, const std::string& where) {
  static const Readers<MountOp> readers = {
      {"kind", enum_into(&MountOp::kind, parse_mount_kind)},
      {"source", string_into(&MountOp::source)},
      {"dest", string_into(&MountOp::dest)},
      {"optional", bool_into(&MountOp::optional)},
      {"perms", [](const Value& v, MountOp& m, const std::string& f) -> Result<void> {
         auto p = get_perms(f, v);
         if (!p) return fail(p.error());
         m.perms = *p;
         return {};
       }},
      {"size", [](const Value& v, MountOp& m, const std::string& f) -> Result<void> {
         auto s = get_int(f, v, 0, std::numeric_limits<int64_t>::max());
         if (!s) return fail(s.error());
         m.size = static_cast<uint64_t>(*s);
         return {};
       }},
      {"data",
       [](const Value& v, MountOp& m, const std::string& f) -> Result<void> {
         auto s = get_string(f, v, true);
         if (!s) return fail(s.error());
         m.data = std::move(*s);
         return {};
       }},
      {"source_fd", optional_id_into(&MountOp::source_fd)},
      {"layers", strings_into(&MountOp::layers)},
      {"workdir", string_into(&MountOp::workdir)},
  };
  MountOp m;
  if (v.is_object() && v.find("kind") == nullptr) return fail(field_error(where, "missing field 'kind'"));
  if (auto r = read_object(v, m, where, readers); !r) return fail(r.error());
  return m;
}

Result<EnvOp> env_from_json(const Value& v, const std::string& where) {
  static const Readers<EnvOp> readers = {
      {"op", enum_into(&EnvOp::kind, parse_env_kind)},
      {"name", string_into(&EnvOp::name)},
      {"value", string_into(&EnvOp::value)},
  };
  EnvOp e;
  if (auto r = read_object(v, e, where, readers); !r) return fail(r.error());
  // A value on unset, allow or deny would be dropped on the way back out
  // (to_json writes one for set only), and means the entry was misread.
  if (e.kind != EnvOp::Kind::set && v.find("value") != nullptr)
    return fail(field_error(fmt::format("{}.value", where), fmt::format("only for op set, not {}", name(e.kind))));
  return e;
}

Result<SettingsCopy> settings_copy_from_json(const Value& v, const std::string& where) {
  static const Readers<SettingsCopy> readers = {
      {"path", string_into(&SettingsCopy::path)},
      {"text", string_into(&SettingsCopy::text)},
  };
  SettingsCopy c;
  if (auto r = read_object(v, c, where, readers); !r) return fail(r.error());
  return c;
}

template <class T>
auto list_into(std::vector<T> Policy::*member, Result<T> (*item)(const Value&, const std::string&)) {
  return [member, item](const Value& v, Policy& p, const std::string& f) -> Result<void> {
    if (!v.is_array()) return fail(type_error(f, "array", v));
    std::vector<T> out;
    for (std::size_t i = 0; i < v.as_array().size(); ++i) {
      auto e = item(v.as_array()[i], fmt::format("{}[{}]", f, i));
      if (!e) return fail(e.error());
      out.push_back(std::move(*e));
    }
    p.*member = std::move(out);
    return {};
  };
}

const Readers<Namespaces>& namespace_readers() {
  static const Readers<Namespaces> readers = [] {
    Readers<Namespaces> out;
    for (const auto& k : namespace_kinds)
      if (k.in_policy) out.emplace_back(k.name, bool_into(namespace_field(k.clone_flag)));
    return out;
  }();
  return readers;
}

// "network": a mode name, or {mode, allow, deny, resolve, log} for the
// egress proxy.
Result<void> network_from_json(const Value& v, Policy& p, const std::string& f) {
  if (v.is_string()) return enum_into(&Policy::network, parse_network)(v, p, f);
  static const Readers<Policy> readers = {
      {"mode", enum_into(&Policy::network, parse_network)},
      {"allow", [](const Value& x, Policy& q, const std::string& g) { return strings_into(&EgressRules::allow)(x, q.egress, g); }},
      {"deny", [](const Value& x, Policy& q, const std::string& g) { return strings_into(&EgressRules::deny)(x, q.egress, g); }},
      {"resolve", [](const Value& x, Policy& q, const std::string& g) { return strings_into(&EgressRules::resolve)(x, q.egress, g); }},
      {"log", [](const Value& x, Policy& q, const std::string& g) { return string_into(&EgressRules::log)(x, q.egress, g); }},
  };
  return read_object(v, p, f, readers);
}

Value network_to_json(const Policy& p) {
  if (p.network != Network::proxy && p.egress == EgressRules{}) return Value(name(p.network));
  Value out = Value::object();
  out.set("mode", name(p.network));
  out.set("allow", strings(p.egress.allow));
  out.set("deny", strings(p.egress.deny));
  out.set("resolve", strings(p.egress.resolve));
  out.set("log", p.egress.log);
  return out;
}

const Readers<Policy>& policy_readers() {
  static const Readers<Policy> readers = {
      {"mode", enum_into(&Policy::mode, parse_mode)},
      {"workspace", string_into(&Policy::workspace)},
      {"writable", strings_into(&Policy::writable)},
      {"preset", bool_into(&Policy::preset)},
      {"follow_symlinks", bool_into(&Policy::follow_symlinks)},
      {"mounts", list_into<MountOp>(&Policy::mounts, mount_from_json)},
      {"namespaces", [](const Value& v, Policy& p, const std::string& f) {
         return read_object(v, p.ns, f, namespace_readers());
       }},
      {"uid", optional_id_into(&Policy::uid)},
      {"gid", optional_id_into(&Policy::gid)},
      {"hostname", string_into(&Policy::hostname)},
      {"proc", enum_into(&Policy::proc, parse_proc_mode)},
      {"host_backend", string_into(&Policy::host_backend)},
      {"backend", enum_into(&Policy::backend, parse_backend)},
      {"network", network_from_json},
      {"seccomp", enum_into(&Policy::seccomp, parse_seccomp_mode)},
      {"allow_nested_userns", bool_into(&Policy::allow_nested_userns)},
      {"offline_env", bool_into(&Policy::offline_env)},
      {"unix_sockets", enum_into(&Policy::unix_sockets, parse_unix_sockets)},
      {"hidden_sockets", strings_into(&Policy::hidden_sockets)},
      {"allow_sockets", strings_into(&Policy::allow_sockets)},
      {"protect_defaults", bool_into(&Policy::protect_defaults)},
      {"protect", strings_into(&Policy::protect)},
      {"unprotect", strings_into(&Policy::unprotect)},
      {"hide_defaults", bool_into(&Policy::hide_defaults)},
      {"allow_read", strings_into(&Policy::allow_read)},
      {"hidden_paths", strings_into(&Policy::hidden_paths)},
      {"shown_in_hidden", strings_into(&Policy::shown_in_hidden)},
      {"settings_copy", bool_into(&Policy::settings_copy)},
      {"settings_copies", list_into<SettingsCopy>(&Policy::settings_copies, settings_copy_from_json)},
      {"cap_add", strings_into(&Policy::cap_add)},
      {"cap_grant_inheritable", bool_into(&Policy::cap_grant_inheritable)},
      {"clearenv", bool_into(&Policy::clearenv)},
      {"env", list_into<EnvOp>(&Policy::env, env_from_json)},
      {"chdir", string_into(&Policy::chdir)},
      {"as_pid_1", bool_into(&Policy::as_pid_1)},
      {"die_with_parent", bool_into(&Policy::die_with_parent)},
      {"new_session", [](const Value& v, Policy& p, const std::string& f) -> Result<void> {
         if (v.is_null()) {
           p.new_session = std::nullopt;
           return {};
         }
         auto b = get_bool(f, v);
         if (!b) return fail(b.error());
         p.new_session = *b;
         return {};
       }},
      {"pass_fds", [](const Value& v, Policy& p, const std::string& f) -> Result<void> {
         auto i = get_ints(f, v);
         if (!i) return fail(i.error());
         p.pass_fds = std::move(*i);
         return {};
       }},
      {"limits", [](const Value& v, Policy& p, const std::string& f) -> Result<void> {
         auto l = limits_from_json(v, p.limits, f);
         if (!l) return fail(l.error());
         p.limits = std::move(*l);
         return {};
       }},
      {"verdict", bool_into(&Policy::verdict)},
      {"watch_writes", bool_into(&Policy::watch_writes)},
      {"report_path", string_into(&Policy::report_path)},
      {"report_fd", optional_id_into(&Policy::report_fd)},
      {"argv", strings_into(&Policy::argv)},
      {"argv0", string_into(&Policy::argv0)},
      {"workspace_mode", enum_into(&Policy::workspace_mode, parse_workspace_mode)},
      {"home", [](const Value& v, Policy& p, const std::string& f) -> Result<void> {
         auto r = enum_into(&Policy::home, parse_home_mode)(v, p, f);
         if (r) p.home_given = true;
         return r;
       }},
      {"cow_dir", string_into(&Policy::cow_dir)},
      {"home_layer", string_into(&Policy::home_layer)},
      {"run_id", string_into(&Policy::run_id)},
  };
  return readers;
}

}  // namespace

json::Value to_json(const Policy& p) {
  Value out = Value::object();
  out.set("mode", name(p.mode));
  out.set("workspace", p.workspace);
  out.set("writable", strings(p.writable));
  out.set("preset", p.preset);
  out.set("follow_symlinks", p.follow_symlinks);
  Value mounts = Value::array();
  for (const auto& m : p.mounts) mounts.push_back(mount_to_json(m));
  out.set("mounts", std::move(mounts));
  Value ns = Value::object();
  for (const auto& k : namespace_kinds)
    if (k.in_policy) ns.set(k.name, p.ns.*namespace_field(k.clone_flag));
  out.set("namespaces", std::move(ns));
  out.set("uid", p.uid ? Value(*p.uid) : Value());
  out.set("gid", p.gid ? Value(*p.gid) : Value());
  out.set("hostname", p.hostname);
  out.set("proc", name(p.proc));
  out.set("host_backend", p.host_backend);
  out.set("backend", name(p.backend));
  out.set("network", network_to_json(p));
  out.set("seccomp", name(p.seccomp));
  out.set("allow_nested_userns", p.allow_nested_userns);
  out.set("offline_env", p.offline_env);
  out.set("unix_sockets", name(p.unix_sockets));
  out.set("hidden_sockets", strings(p.hidden_sockets));
  out.set("allow_sockets", strings(p.allow_sockets));
  out.set("protect_defaults", p.protect_defaults);
  out.set("protect", strings(p.protect));
  out.set("unprotect", strings(p.unprotect));
  out.set("hide_defaults", p.hide_defaults);
  out.set("allow_read", strings(p.allow_read));
  out.set("hidden_paths", strings(p.hidden_paths));
  out.set("shown_in_hidden", strings(p.shown_in_hidden));
  out.set("settings_copy", p.settings_copy);
  Value copies = Value::array();
  for (const auto& c : p.settings_copies) copies.push_back(settings_copy_to_json(c));
  out.set("settings_copies", std::move(copies));
  out.set("cap_add", strings(p.cap_add));
  out.set("cap_grant_inheritable", p.cap_grant_inheritable);
  out.set("clearenv", p.clearenv);
  Value env = Value::array();
  for (const auto& e : p.env) env.push_back(env_to_json(e));
  out.set("env", std::move(env));
  out.set("chdir", p.chdir);
  out.set("as_pid_1", p.as_pid_1);
  out.set("die_with_parent", p.die_with_parent);
  out.set("new_session", p.new_session ? Value(*p.new_session) : Value());
  out.set("pass_fds", ints(p.pass_fds));
  out.set("limits", to_json(p.limits));
  out.set("verdict", p.verdict);
  out.set("watch_writes", p.watch_writes);
  out.set("report_path", p.report_path);
  out.set("report_fd", p.report_fd ? Value(*p.report_fd) : Value());
  out.set("argv", strings(p.argv));
  out.set("argv0", p.argv0);
  out.set("workspace_mode", name(p.workspace_mode));
  // Only a home named: the default reads back as the default.
  if (p.home_given) out.set("home", name(p.home));
  out.set("cow_dir", p.cow_dir);
  out.set("home_layer", p.home_layer);
  out.set("run_id", p.run_id);
  return out;
}

Result<Policy> from_json(const json::Value& doc, Policy base) {
  if (auto r = read_object(doc, base, "", policy_readers()); !r) return fail(r.error());
  return base;
}

std::vector<std::string_view> policy_json_fields() {
  std::vector<std::string_view> out;
  for (const auto& [key, reader] : policy_readers()) out.push_back(key);
  return out;
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
