#include "chorus/transport.h"

namespace chorus {

Transport::~Transport() = default;

}  // namespace chorus
