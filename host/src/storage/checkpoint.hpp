// The checkpoint functions are public (an embedding program uses them too); this name is kept for
// the host's own sources.
#pragma once

#include "hookhost/host/checkpoint.hpp"
