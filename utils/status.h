// Status lives in the public header chorus/status.h so that the installed API and
// the internals share one type. Internal code includes this file.
#ifndef CHORUS_UTILS_STATUS_H_
#define CHORUS_UTILS_STATUS_H_

#include "chorus/status.h"

#endif  // CHORUS_UTILS_STATUS_H_
