// Checks a Node's Options before anything is opened.
#ifndef CHORUS_NODE_OPTIONS_VALIDATION_H_
#define CHORUS_NODE_OPTIONS_VALIDATION_H_

#include "chorus/options.h"
#include "chorus/status.h"

namespace chorus {

// Returns ok, or InvalidArgument whose message names the offending field and
// value. Does not touch the file system (the data dir is checked on open).
Status ValidateNodeOptions(const Options& options);

}  // namespace chorus

#endif  // CHORUS_NODE_OPTIONS_VALIDATION_H_
