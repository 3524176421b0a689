#include "cli/help.hpp"

#include <cstdio>

#include <fmt/core.h>

#include "sys/error.hpp"

namespace nsrun {

std::span<const HelpTopic> help_topics() {
  static constexpr HelpTopic topics[] = {
      {"modes", "what the command may read and write: read-only, workspace-write, full-access",
       "nsrun help modes\n"
       "\n"
       "  --mode read-only        read the host (minus hidden credentials); write nothing of it;\n"
       "                          a private /tmp; $HOME copy-on-write\n"
       "  --mode workspace-write  (default) the same, and write the workspace (--workspace DIR,\n"
       "                          default the current directory) and every --writable DIR,\n"
       "                          minus --ro paths and the protected ones (.git/hooks, .envrc, ...)\n"
       "  --mode full-access      no sandbox at all, said on stderr\n"
       "\n"
       "  --workspace-mode cow    the workspace's writes go to a run layer (nsrun help layers)\n"
       "  --home cow|ro|rw        $HOME: a persistent layer (default), read-only, or writable\n"
       "  --hide PATH, --ro PATH, --allow-read PATH, --hide-defaults none, --protect PATH\n"
       "\n"
       "Each mode is kept on either rung: the namespace rung, else Landlock (nsrun help rungs).\n"
       "More: README.md \"Modes\", docs/hardening.md.\n"},
      {"layers", "copy-on-write workspace and home: changes, commit, discard, runs, home",
       "nsrun help layers\n"
       "\n"
       "  nsrun --workspace-mode cow -- CMD   writes land in a run layer; the run id is on stderr\n"
       "  nsrun changes ID [--patch|--json]   what the run changed (A/M/D/R lines, a patch, JSON)\n"
       "  nsrun commit ID [PATH...]           apply it (exit 3 conflicts, 4 protected, 5 failed)\n"
       "  nsrun discard ID                    drop the layer\n"
       "  nsrun runs [--json] | runs prune (--older-than AGE | --all)\n"
       "  --home cow (default)                the home's writes land in a persistent layer, one per\n"
       "                                      workspace (--home-layer NAME to share one)\n"
       "  nsrun home list|diff|reset [NAME]   see and drop home layers\n"
       "\n"
       "The Landlock rung has no overlay: cow is refused there, never replaced by direct writes.\n"
       "More: README.md \"Copy-on-write workspace and home\".\n"},
      {"egress", "the network: share, none, or only through nsrun's proxy to allowed hosts",
       "nsrun help egress\n"
       "\n"
       "  --network share       (default) the host's network\n"
       "  --network none        a network namespace with only lo (pathname unix sockets are files:\n"
       "                        --unix-sockets none refuses them); package managers told they are offline\n"
       "  --network proxy       only through nsrun's HTTP/SOCKS proxy and DNS stub:\n"
       "    --allow-host registry.npmjs.org --allow-host '*.github.com'   hosts it may reach\n"
       "    --deny-host HOST    never, even when allowed      --resolve-host NAME=ADDRESS\n"
       "    --network-log FILE  each decision as a JSON line (also in the report's network.decisions)\n"
       "  nsrun connect HOST PORT   inside: a tunnel through the proxy (ssh ProxyCommand)\n"
       "\n"
       "IP literals pass only by an address rule; internal addresses are refused.\n"
       "More: README.md \"Hardened by default\", docs/hardening.md.\n"},
      {"limits", "memory, processes, CPU, timeout, and how each is kept",
       "nsrun help limits\n"
       "\n"
       "  --limit-memory 2G   --limit-pids 256   --limit-cpu 0.5   --timeout 10m (exit 124)\n"
       "  --kill-after 2s     --rlimit NAME=SOFT[:HARD]           --tmpfs-size 512M\n"
       "  --limits strict       (default) refuse a limit nothing on this host can keep\n"
       "  --limits best-effort  run anyway; the report says `none` for that limit\n"
       "  --limits require-cgroup   refuse unless a delegated cgroup holds the whole sandbox\n"
       "\n"
       "Each limit is kept by a cgroup where one is delegated ($NSRUN_CGROUP, or\n"
       "systemd-run --user --scope -p Delegate=yes), else by an rlimit where that keeps the\n"
       "same promise. `nsrun explain` says which, per limit. More: docs/limits.md.\n"},
      {"rungs", "the ladder: namespaces, then Landlock, else a refusal",
       "nsrun help rungs\n"
       "\n"
       "  1. namespaces: user, PID, mount, IPC, UTS, cgroup (and net) namespaces, a new root\n"
       "  2. landlock: when the host refuses namespaces, a Landlock ruleset and seccomp keep the\n"
       "     same file promise; metadata changes and SysV IPC are refused everywhere there\n"
       "  3. neither: one line naming each rung and why, exit 125; never unconfined\n"
       "\n"
       "  --backend namespaces|landlock   pin a rung      nsrun probe [--json]   what this host allows\n"
       "More: docs/ladder.md (reason codes).\n"},
      {"report", "the JSON launch report (--report FILE) and the --verdict line",
       "nsrun help report\n"
       "\n"
       "  --report PATH | --report-fd FD   one JSON object per launch (docs/report.schema.json):\n"
       "    schema_version  rung  rungs[] (each rung: used, reason, detail)  mode  proc  seccomp\n"
       "    landlock  phases (microseconds per launch phase)  launch_micros  exit_code  error\n"
       "    ended (exit, signal, timeout, oom, rlimit)  usage  limits (mechanism per limit)\n"
       "    refusals[] {kind, what, allow, count, words}: what was refused and the option that\n"
       "      would allow it    unobserved[]: what the kernel answered without nsrun seeing it\n"
       "    denials  protected  hidden_credentials  layers (run_id, home)  network (decisions)\n"
       "    writes_outside (--watch-writes)\n"
       "  --verdict   after a failure, one stderr line naming the first refusals\n"
       "More: docs/limits.md \"The report\", docs/ladder.md.\n"},
      {"settings", "settings files: ~/.config/nsrun/settings.json and the workspace's .nsrun.json",
       "nsrun help settings\n"
       "\n"
       "  $XDG_CONFIG_HOME/nsrun/settings.json (else ~/.config/...; --settings FILE)  the user's\n"
       "  WORKSPACE/.nsrun.json   the workspace's: it may only narrow (the command can write it)\n"
       "  the command line        applied last; it wins       --no-settings   read neither\n"
       "\n"
       "  {\"network\": {\"mode\": \"proxy\", \"allow\": [\"registry.npmjs.org\"]},\n"
       "   \"filesystem\": {\"read_only\": [\"${WORKSPACE}/.git\"], \"writable\": [\"~/.cache/ccache\"]},\n"
       "   \"limits\": {\"memory\": \"4G\", \"timeout\": \"30m\"}}\n"
       "\n"
       "Each key is an option by another spelling. nsrun policy --explain-source says where\n"
       "each value came from. Keys and examples: docs/settings.md.\n"},
      {"exit", "exit statuses",
       "nsrun help exit\n"
       "\n"
       "  the command's own status; 128+N when it died of signal N\n"
       "  124  --timeout ended it\n"
       "  125  nsrun failed or its input was bad: one line `nsrun: <what>: <why>`, nothing ran\n"
       "  126  the command was found but could not be executed\n"
       "  127  the command was not found\n"
       "  nsrun commit: 3 conflicts, 4 protected paths refused, 5 a path failed\n"},
  };
  return topics;
}

std::span<const std::string_view> subcommands() {
  static constexpr std::string_view subs[] = {"policy", "explain", "probe",   "changes", "commit", "discard",
                                              "runs",   "home",    "connect", "bench",   "bwrap",  "session",
                                              "exec",   "jobs",    "logs",    "kill",    "help"};
  return subs;
}

std::optional<std::string_view> subcommand_help(std::string_view sub) {
  if (sub == "policy")
    return "usage: nsrun policy [--explain-source] [OPTIONS] [-- COMMAND]\n"
           "\n"
           "Prints the Policy the options (and the settings files) give, as JSON, without\n"
           "running anything; --policy FILE reads it back. --explain-source prints instead\n"
           "where each value came from: a settings file and key, or the command line.\n"
           "OPTIONS: those of a run (nsrun --help, man nsrun).\n";
  if (sub == "explain")
    return "usage: nsrun explain [OPTIONS] [-- COMMAND]\n"
           "       nsrun explain --bwrap BWRAP-ARGS...\n"
           "\n"
           "Prints what a launch would do, running nothing: the rung, the namespaces, the id\n"
           "maps, the ordered mount plan, the hidden and protected paths, each limit's\n"
           "mechanism. --bwrap explains a bwrap command line instead.\n"
           "OPTIONS: those of a run (nsrun --help, man nsrun).\n";
  if (sub == "probe")
    return "usage: nsrun probe [--json] [OPTIONS]\n"
           "\n"
           "Tries each rung on this host as a launch would, stopped before the exec, and\n"
           "says which one would run and why the others would not (nsrun help rungs).\n"
           "OPTIONS: those of a run; --json prints the result as JSON.\n";
  if (sub == "session")
    return "usage: nsrun session start NAME [--idle-timeout DURATION] [OPTIONS]\n"
           "       nsrun session stop NAME\n"
           "       nsrun session list [--json]\n"
           "\n"
           "start makes one sandbox (namespace rung only) from the options of a launch and\n"
           "returns when it is ready; nsrun exec runs commands in it, and background jobs\n"
           "live between them. --timeout limits the whole session, --idle-timeout the time\n"
           "with no caller connected. --verdict prints every failed exec's verdict line;\n"
           "--watch-writes lists each exec's write attempts in its report (nsrun exec\n"
           "--report). stop ends every process; a cow run layer stays for\n"
           "nsrun changes/commit/discard. The control socket and its protocol:\n"
           "docs/sessions.md.\n";
  if (sub == "exec")
    return "usage: nsrun exec NAME [--cwd DIR] [--env NAME=VALUE]... [--timeout DURATION]\n"
           "                  [--background | [--verdict] [--report FILE | --report-fd N]] -- COMMAND...\n"
           "\n"
           "Runs COMMAND in session NAME with this terminal's stdin, stdout and stderr, and\n"
           "exits with its status (124, 128+N and 125 as for a launch). --background\n"
           "prints a job id and returns at once; its output goes to a bounded log\n"
           "(nsrun logs). --timeout ends COMMAND's process group (SIGTERM, then SIGKILL\n"
           "after the session's --kill-after) with 124. --report FILE (outside the\n"
           "session's writable directories) or --report-fd N gets this command's launch\n"
           "report (how it ended, what it used, what was refused to it); --verdict\n"
           "prints a launch's verdict line when it failed. What is attributed to one\n"
           "command: docs/sessions.md.\n";
  if (sub == "jobs")
    return "usage: nsrun jobs NAME [--json]\n"
           "\n"
           "Lists the background jobs of session NAME: id, state, exit status, command.\n";
  if (sub == "logs")
    return "usage: nsrun logs NAME JOB [--follow]\n"
           "\n"
           "Prints what background job JOB wrote (its last 8 MiB at most); --follow goes\n"
           "on until the job ends.\n";
  if (sub == "kill")
    return "usage: nsrun kill NAME JOB [--signal SIG]\n"
           "\n"
           "Sends SIG (default TERM) to background job JOB's process group in session NAME.\n";
  return std::nullopt;
}

std::string help_index() {
  std::string out =
      "usage: nsrun help TOPIC      a short text on TOPIC\n"
      "       nsrun SUBCOMMAND --help\n"
      "\n"
      "topics:\n";
  for (const auto& t : help_topics()) out += fmt::format("  {:<10} {}\n", t.name, t.summary);
  out += "\nsubcommands (each has --help):\n ";
  std::size_t column = 1;
  for (auto s : subcommands()) {
    if (column + 1 + s.size() > 80) {
      out += "\n ";
      column = 1;
    }
    out += fmt::format(" {}", s);
    column += 1 + s.size();
  }
  out += "\n\nEvery option: nsrun --help, man nsrun (the same topics under HELP TOPICS).\n";
  return out;
}

int help_main(std::span<const std::string> args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || (args.size() == 1 && args[0] == "help")) {
    fmt::print("{}", help_index());
    return 0;
  }
  if (args.size() > 1) {
    fmt::print(stderr, "nsrun: {}\n", usage_error("help", "takes one topic (nsrun help lists them)").message());
    return 125;
  }
  for (const auto& t : help_topics())
    if (t.name == args[0]) {
      fmt::print("{}", t.text);
      return 0;
    }
  std::string names;
  for (const auto& t : help_topics()) names += names.empty() ? std::string(t.name) : fmt::format(", {}", t.name);
  fmt::print(stderr, "nsrun: {}\n",
             usage_error(fmt::format("help {}", args[0]), fmt::format("no such topic (topics: {})", names)).message());
  return 125;
}

}  // namespace nsrun
