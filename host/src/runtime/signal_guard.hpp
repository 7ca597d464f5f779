// The host owns the handlers of the signals it relies on: SIGINT and SIGTERM (a clean stop) and the
// fatal ones (the crash blame line). A plugin that installs its own handler for one of them would
// turn a stop request into a hang, or a crash into silence, so the host notices and undoes it:
//  - the runtime snapshots the dispositions around create() and every call but the per-step ones
//    (before_run and after_run: two system calls per signal per call would cost more than the
//    call), and the loader around loading a library;
//  - the hookhost program also interposes sigaction() and signal() (host/app), so a plugin's change
//    is refused when it is made, per-step calls and plugin threads included.
// Each change is logged as an error naming the hook (or plugin file) and the signals.
#pragma once

#include "plugins/signal_dispositions.hpp"

namespace hookhost {

// For the program's sigaction()/signal() interposer: whether the caller (its return address) is in
// a plugin library. When it is, logs the refusal naming the hook and callback (the call running on
// this thread) or the plugin file, and `function`, and returns true: the change is not to be made.
// A library the plugin links that installs handlers itself is left to the snapshots.
bool refuse_plugin_signal_change(int signal, const void* caller, const char* function);

}  // namespace hookhost
