// A plugin written against the raw C ABI in C++, without the SDK, that lets an exception escape a
// lifecycle callback: a std::exception (`what = std`) or something else (`what = int`). The host
// catches either as a second line of defence, in process and in a runner alike.
#include <hookhost/hookhost.h>

#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace {

struct Thrower {
  hh_hook hook;  // first: the host hands the hh_hook* back
  std::string what;
  std::string callback;
};

void maybe_throw(const hh_hook* hook, const char* callback) {
  const auto* t = reinterpret_cast<const Thrower*>(hook);
  if (t->callback != callback) return;
  if (t->what == "int") throw 42;
  throw std::runtime_error(std::string("faulty_throw: thrown in ") + callback);
}

hh_status t_begin(hh_hook* h, hh_error*) {
  maybe_throw(h, "begin");
  return HH_OK;
}
hh_status t_after_create_session(hh_hook* h, const hh_session_info*, hh_error*) {
  maybe_throw(h, "after_create_session");
  return HH_OK;
}
hh_status t_before_run(hh_hook* h, const hh_run_context*, hh_run_request*, hh_error*) {
  maybe_throw(h, "before_run");
  return HH_OK;
}
hh_status t_after_run(hh_hook* h, const hh_run_context*, const hh_run_values*, hh_error*) {
  maybe_throw(h, "after_run");
  return HH_OK;
}
hh_status t_end(hh_hook* h, const hh_end_info*, hh_error*) {
  maybe_throw(h, "end");
  return HH_OK;
}
void t_destroy(hh_hook* h) {
  delete reinterpret_cast<Thrower*>(h);
}

std::string text_param(const hh_create_args* args, const char* name) {
  const hh_param_value* v = hh_find_param(args, name);
  return v && v->is_set && v->string_value ? v->string_value : "";
}

hh_status t_create(const hh_host*, const hh_create_args* args, hh_hook** out, hh_error* err) {
  auto* t = new (std::nothrow) Thrower{};
  if (!t) return hh_fail(err, HH_ERROR, "out of memory");
  t->hook.struct_size = HH_HOOK_SIZE;
  t->hook.begin = t_begin;
  t->hook.after_create_session = t_after_create_session;
  t->hook.before_run = t_before_run;
  t->hook.after_run = t_after_run;
  t->hook.end = t_end;
  t->hook.destroy = t_destroy;
  t->what = text_param(args, "what");
  t->callback = text_param(args, "callback");
  *out = &t->hook;
  return HH_OK;
}

}  // namespace

#define THROW_PARAMS(P)                                                           \
  P(what, STRING, DEFAULT, "std", "std (a std::runtime_error) or int (throw 42)") \
  P(callback, STRING, DEFAULT, "after_run", "the callback that throws, every time")

HH_PLUGIN_DEFINE("faulty_throw", "1.0.0", "Test fixture: an exception escapes the raw ABI",
                 THROW_PARAMS, t_create)
