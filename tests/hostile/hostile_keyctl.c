/* Asks for its thread keyring, creating it (it goes with the thread). */
#include "hostile.h"

#include <linux/keyctl.h>

static void hostile_attempt(hostile* h) {
  hostile_report(h, "keyctl(KEYCTL_GET_KEYRING_ID)",
                 syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_THREAD_KEYRING, 1));
}

HH_PLUGIN_DEFINE("hostile_keyctl", "1.0.0", "Test fixture: uses the kernel keyrings", HH_NO_PARAMS,
                 hostile_create)
