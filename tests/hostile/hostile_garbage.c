/* Writes bytes that are no message into the runner's channel to the host (descriptor 3), then
 * goes on as if nothing happened. */
#include "hostile.h"

static void hostile_attempt(hostile* h) {
  static const char garbage[] = "\xff\xff\xff\xff garbage, not a frame \x00\x01\x02";
  const long rc = syscall(SYS_write, 3, garbage, sizeof garbage);
  hostile_report(h, "write garbage to the channel", rc >= 0 ? 0 : -1);
}

HH_PLUGIN_DEFINE("hostile_garbage", "1.0.0", "Test fixture: writes garbage into its channel",
                 HH_NO_PARAMS, hostile_create)
