// The host's half of a forwarded host call: carries out one service_request a runner sent on the
// instance's real hh_host (and, for add_fetch/add_feed, the real hh_run_request of the before_run
// in progress), so every argument meets the same checks and every result is the in-process one.
#pragma once

#include <string>

#include <hookhost/hook.h>

#include "protocol.hpp"

namespace hookhost::sandbox {

// `request` is the open request of the before_run in progress on this thread, or nullptr (no
// before_run: add_fetch/add_feed are refused). Writes the reply's fields into `reply`. Returns
// false with `why` when the request is not one this protocol encodes: the runner is not to be
// trusted any more.
bool serve_request(const hh_host& host, hh_run_request* request, Reader& in, Writer& reply,
                   std::string* why);

}  // namespace hookhost::sandbox
