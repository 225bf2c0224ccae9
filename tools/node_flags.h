// SetNodeAddresses: what the sample servers do with their --node, --nodes,
// --join and --data_dir flags (the flags themselves stay in each program's own file,
// so that its --help lists them).
//
// Header-only and for programs only: the library never reads flags.
#ifndef CHORUS_TOOLS_NODE_FLAGS_H_
#define CHORUS_TOOLS_NODE_FLAGS_H_

#include <string>

#include "chorus/logging.h"
#include "chorus/options.h"
#include "chorus/status.h"
#include "chorus/transport.h"

namespace chorus {

// Sets options->self from `node` ("[id@]host:port", NodeInfo::Parse),
// options->nodes from `nodes` (a comma separated list of those: the initial
// membership), options->join from `join` (members to join the cluster
// through, for a new node; then `nodes` must be empty) and
// options->data_dir. Returns "" on success, else the problem, naming the
// flag ("--node: ...", "--data_dir is required").
inline std::string SetNodeAddresses(const std::string& node, const std::string& nodes,
                                    const std::string& data_dir, Options* options,
                                    const std::string& join = "") {
  Status s = NodeInfo::Parse(node, &options->self);
  if (!s.ok()) return "--node: " + s.ToString();
  if (!join.empty()) {
    if (!nodes.empty()) return "--nodes and --join exclude each other (--join: a new node)";
    s = NodeInfo::ParseList(join, &options->join);
    if (!s.ok()) return "--join: " + s.ToString();
  } else {
    s = NodeInfo::ParseList(nodes, &options->nodes);
    if (!s.ok()) return "--nodes: " + s.ToString();
  }
  if (data_dir.empty()) return "--data_dir is required";
  options->data_dir = data_dir;
  return "";
}

// Sets *level from a --log_level flag: "debug", "info", "warning", "error"
// or "none". Returns "" on success, else the problem.
inline std::string SetLogLevel(const std::string& text, LogLevel* level) {
  static const struct {
    const char* name;
    LogLevel level;
  } kLevels[] = {{"debug", LogLevel::kDebug},     {"info", LogLevel::kInfo},
                 {"warning", LogLevel::kWarning}, {"error", LogLevel::kError},
                 {"none", LogLevel::kNone}};
  for (const auto& l : kLevels) {
    if (text == l.name) {
      *level = l.level;
      return "";
    }
  }
  return "--log_level: '" + text + "' is not one of debug, info, warning, error, none";
}

}  // namespace chorus

#endif  // CHORUS_TOOLS_NODE_FLAGS_H_
