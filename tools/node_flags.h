// SetNodeAddresses: what the sample servers do with their --node, --nodes
// and --data_dir flags (the flags themselves stay in each program's own file,
// so that its --help lists them).
//
// Header-only and for programs only: the library never reads flags.
#ifndef CHORUS_TOOLS_NODE_FLAGS_H_
#define CHORUS_TOOLS_NODE_FLAGS_H_

#include <string>

#include "chorus/options.h"
#include "chorus/status.h"
#include "chorus/transport.h"

namespace chorus {

// Sets options->self from `node` ("ip:port"), options->nodes from `nodes`
// ("ip:port,ip:port,...") and options->data_dir. Returns "" on success, else
// the problem, naming the flag ("--node: ...", "--data_dir is required").
inline std::string SetNodeAddresses(const std::string& node, const std::string& nodes,
                                    const std::string& data_dir, Options* options) {
  Status s = NodeInfo::Parse(node, &options->self);
  if (!s.ok()) return "--node: " + s.ToString();
  s = NodeInfo::ParseList(nodes, &options->nodes);
  if (!s.ok()) return "--nodes: " + s.ToString();
  if (data_dir.empty()) return "--data_dir is required";
  options->data_dir = data_dir;
  return "";
}

}  // namespace chorus

#endif  // CHORUS_TOOLS_NODE_FLAGS_H_
