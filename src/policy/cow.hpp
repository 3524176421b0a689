// Copy-on-write layers: a workspace whose writes land in
// a per-run upper layer that `nsrun commit` reviews back, and a home whose
// writes land in a persistent per-workspace layer the real home never sees.
// Only names and the resolved directories live here; the directories are
// made by src/layers/ at launch.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nsrun {

// --workspace-mode: `direct` binds the workspace writable; `cow` mounts it
// as an overlay whose lower layer is the real workspace (never written).
enum class WorkspaceMode { direct, cow };
// --home: `cow` (the presets' default) overlays $HOME with a persistent
// layer; `ro` leaves it as the read-only root shows it; `rw` binds it
// writable (stated on stderr).
enum class HomeMode { ro, cow, rw };

// One overlay's host directories. `upper` and `work` are siblings in a
// private directory owned by the caller; empty until made.
struct LayerDirs {
  std::string lower;
  std::string upper;
  std::string work;
  bool operator==(const LayerDirs&) const = default;
};

// What the front end resolved from the caller's environment, and what the
// launch made from it. Not read from policy JSON (paths of this host and
// this run); `nsrun policy` prints them for review.
struct CowLayers {
  std::string home;        // the caller's $HOME, canonical; empty: none usable
  std::string run_base;    // where run layers go: from the environment ($XDG_RUNTIME_DIR/nsrun/runs, ...),
                           // and --cow-dir once settled (settle_layers())
  std::string home_base;   // where home layers go ($XDG_STATE_HOME/nsrun/home, ...)
  std::string home_name;   // the home layer's name, once settled (--home-layer, else one per workspace)
  // Made at launch (src/layers/):
  std::string run_id;
  LayerDirs workspace;     // the workspace overlay
  LayerDirs home_layer;    // the home overlay
  // The fallback where no overlay can be made (the Landlock rung): a
  // persistent directory beside the home layer that the well-known caches
  // are pointed at (cache_redirects()), writable there.
  std::string redirect;
  bool operator==(const CowLayers&) const = default;
};

std::string_view name(WorkspaceMode);
std::string_view name(HomeMode);
std::optional<WorkspaceMode> parse_workspace_mode(std::string_view);
std::optional<HomeMode> parse_home_mode(std::string_view);

// A layer name: 1 to 64 of [A-Za-z0-9._-], not starting with '.'. It is a
// directory name under the home base, so nothing else may pass.
bool valid_layer_name(std::string_view name);

// A run id: the 12 hexadecimal digits a launch picks, or a caller's
// --run-id: 1 to 64 of [A-Za-z0-9._-] starting with a letter or a digit
// (a directory name under the run base, never an option or a dot file).
bool valid_run_name(std::string_view name);

// The default home layer name of a workspace: its last component (made
// valid) and a hash of the whole path, so two workspaces never share one.
std::string default_layer_name(std::string_view workspace);

// The bases from the caller's environment (XDG base directory rules: a
// relative XDG_* value is ignored). Empty when nothing usable is set.
std::string default_run_base(std::string_view xdg_runtime_dir, std::string_view xdg_state_home,
                             std::string_view home);
std::string default_home_base(std::string_view xdg_state_home, std::string_view home);

}  // namespace nsrun

#include "sys/error.hpp"

namespace nsrun {
struct Policy;
// The copy-on-write options against the rest of the Policy (usage errors).
Result<void> validate_layers(const Policy& policy);
}  // namespace nsrun

namespace nsrun {
// The front end's part: the caller's $HOME (`home`: canonical, a directory,
// or empty), the bases and the home layer's name, from the caller's
// environment.
void resolve_layers(Policy& policy, std::string_view xdg_runtime_dir, std::string_view xdg_state_home,
                    std::string_view home);
}  // namespace nsrun

namespace nsrun {
// The run base (--cow-dir wins) and the home layer's name, from the
// options: done by the launch and explain, not the front end, so an
// option and its Policy JSON field make the same Policy.
std::string run_base_of(const Policy& policy);
std::string home_name_of(const Policy& policy);
void settle_layers(Policy& policy);
// For `nsrun explain`: the layer directories a launch would make, named
// with placeholders ("<run id>", "<launch>"); nothing is created.
void preview_layers(Policy& policy);
// One line each for the workspace mode and the home, for explain.
std::string describe_layers(const Policy& policy);
// The home layers' base directory (Policy::layers.home_base), canonical,
// when it is a directory on the host and no --allow-read names it or a
// directory above it; empty otherwise. Other workspaces' home layers are
// there: a read-only home must not show them.
std::string existing_home_base(const Policy& policy);
// A read-only home (--home ro, or a cow home whose layer cannot be made)
// shows the home as it is, the home layers' base with it: that base goes
// into the hidden paths, as a credential does (--hide-defaults none and
// --allow-read show it). Nothing for other homes, modes and the bwrap
// dialect (no preset).
void hide_home_base(Policy& policy);
}  // namespace nsrun

namespace nsrun {
// The well-known cache locations, each as a variable and its value under
// `dir` (MAVEN_OPTS gets -Dmaven.repo.local appended to `maven_opts`).
std::vector<std::pair<std::string, std::string>> cache_redirects(const std::string& dir, std::string_view maven_opts);
}  // namespace nsrun
