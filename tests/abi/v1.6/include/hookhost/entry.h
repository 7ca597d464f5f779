/* hookhost plugin ABI: the plugin's self-description and its one exported symbol.
 *
 * A plugin library exports exactly one symbol, `hookhost_plugin_v1`, a const hh_plugin_entry (data,
 * not code), and carries the same description in an ELF note (owner "hookhost") so that the host
 * can list and describe it without loading it. Both are generated from one source by
 * HH_PLUGIN_DEFINE below; the host cross-checks them after loading and refuses a mismatch. */
#ifndef HOOKHOST_ENTRY_H
#define HOOKHOST_ENTRY_H

#include "hook.h"

HH_EXTERN_C_BEGIN

/* Parameter types. The host parses and validates values from the schema; plugins never parse
 * configuration text. */
typedef int32_t hh_param_type;
#define HH_PARAM_TYPE_BOOL 1
#define HH_PARAM_TYPE_INT 2   /* int64_t */
#define HH_PARAM_TYPE_FLOAT 3 /* double, finite */
#define HH_PARAM_TYPE_STRING 4
#define HH_PARAM_TYPE_STRING_LIST 5 /* comma-separated in config text */

/* Parameter flags: exactly one of these. */
#define HH_PARAM_FLAG_OPTIONAL 0u /* no default; may be absent (is_set = 0) */
#define HH_PARAM_FLAG_REQUIRED 1u /* no default; the config must give it */
#define HH_PARAM_FLAG_DEFAULT 2u  /* default_value applies when absent */

/* One declared parameter. Static data of the plugin. */
typedef struct hh_param_desc {
  uint32_t struct_size; /* HH_PARAM_DESC_SIZE */
  hh_param_type type;
  uint32_t flags;
  const char* name;          /* [a-z0-9_]+ */
  const char* default_value; /* text in config syntax, valid for `type`; meaningful only with
                              * HH_PARAM_FLAG_DEFAULT */
  const char* help;          /* one line; no tab or newline */
} hh_param_desc;

/* One validated parameter value. Exactly one value per declared parameter, in declaration order. */
typedef struct hh_param_value {
  uint32_t struct_size;
  hh_param_type type;
  int32_t is_set; /* 0 only for an absent HH_PARAM_FLAG_OPTIONAL parameter */
  int32_t bool_value;
  const char* name;
  int64_t int_value;
  double float_value;
  const char* string_value;      /* NUL-terminated; "" unless a string type */
  const char* const* list_items; /* `list_count` NUL-terminated items */
  uint32_t list_count;
} hh_param_value;

/* Given to create(). Host-owned; valid only during create(): copy what you keep. Read parameter i
 * with hh_create_param(args, i). */
typedef struct hh_create_args {
  uint32_t struct_size;
  uint32_t param_count;
  const char* instance_name;
  const hh_param_value* params;
  uint32_t param_stride; /* bytes from one hh_param_value to the next */
} hh_create_args;

typedef struct hh_plugin_entry {
  uint32_t struct_size;    /* HH_PLUGIN_ENTRY_SIZE */
  uint32_t abi_major;      /* HH_ABI_MAJOR the plugin was built against */
  uint32_t abi_minor;      /* HH_ABI_MINOR the plugin was built against */
  uint32_t min_abi_minor;  /* the oldest host minor it runs on (<= abi_minor) */
  const char* id;          /* unique plugin id, [a-z0-9_.-]+ */
  const char* version;     /* the plugin's own version, e.g. "1.2.0" */
  const char* description; /* one line */
  const hh_param_desc* params;
  uint32_t param_count;
  uint32_t param_stride;  /* bytes from one hh_param_desc to the next */
  uint32_t state_version; /* version of the state format this plugin saves with state_put (>= 1);
                           * stored with the state and reported back by state_info */

  /* Creates one instance for one configured use. `host` stays valid until the instance's
   * destroy(). On success writes *out_hook (struct_size at least HH_HOOK_SIZE_1_0, destroy set)
   * and returns HH_OK; on failure (for example an invalid combination of parameters) returns
   * HH_ERROR with a message naming the parameters, and the host reports it as a configuration
   * error. Any other status, or HH_OK without a hook, is a plugin bug the host reports as such.
   * May call `host`. [host-thread] */
  hh_status (*create)(const hh_host* host, const hh_create_args* args, hh_hook** out_hook,
                      hh_error* err);
} hh_plugin_entry;

#define HH_PARAM_DESC_SIZE HH_STRUCT_SIZE(hh_param_desc, help)
#define HH_PARAM_VALUE_SIZE HH_STRUCT_SIZE(hh_param_value, list_count)
#define HH_CREATE_ARGS_SIZE HH_STRUCT_SIZE(hh_create_args, param_stride)
#define HH_PLUGIN_ENTRY_SIZE HH_STRUCT_SIZE(hh_plugin_entry, create)

/* The ABI 1.0 sizes: the smallest struct_size (and stride) a reader ever accepts. */
#define HH_PARAM_DESC_SIZE_1_0 HH_STRUCT_SIZE(hh_param_desc, help)
#define HH_PARAM_VALUE_SIZE_1_0 HH_STRUCT_SIZE(hh_param_value, list_count)
#define HH_CREATE_ARGS_SIZE_1_0 HH_STRUCT_SIZE(hh_create_args, param_stride)
#define HH_PLUGIN_ENTRY_SIZE_1_0 HH_STRUCT_SIZE(hh_plugin_entry, create)

#define HH_ENTRY_SYMBOL "hookhost_plugin_v1"

#ifdef __cplusplus
#define HH_ENTRY_DECL_ extern "C"
#else
#define HH_ENTRY_DECL_ extern
#endif

/* Parameter descriptor `i` of an entry, read with the entry's stride. */
static inline const hh_param_desc* hh_entry_param(const hh_plugin_entry* entry, uint32_t i) {
  return (const hh_param_desc*)(const void*)((const char*)entry->params +
                                             (size_t)i * entry->param_stride);
}

/* Parameter value `i` of create args, read with the host's stride. */
static inline const hh_param_value* hh_create_param(const hh_create_args* args, uint32_t i) {
  return (const hh_param_value*)(const void*)((const char*)args->params +
                                              (size_t)i * args->param_stride);
}

/* The parameter named `name` in create args, or NULL. */
static inline const hh_param_value* hh_find_param(const hh_create_args* args, const char* name) {
  uint32_t i;
  for (i = 0; i < args->param_count; ++i)
    if (__builtin_strcmp(hh_create_param(args, i)->name, name) == 0)
      return hh_create_param(args, i);
  return NULL;
}

/* ---- Options a plugin source may set before including any hookhost header ------------------
 * HH_PLUGIN_STATE_VERSION: the version of the plugin's state format (default 1). Raise it when the
 *   bytes given to state_put change meaning; state_info then reports the older version of a
 *   resumed state, so the plugin can convert or ignore it.
 * HH_PLUGIN_MIN_ABI_MINOR: the oldest host minor the plugin runs on (default HH_ABI_MINOR). Lower
 *   it only when the plugin checks HH_HAS_FIELD before using anything a later minor added.
 * HH_PLUGIN_NEEDS: what the plugin's hooks need when they run confined (isolation = process with
 *   confinement), beyond the system's runtime and their own run folder (default: nothing more).
 *   Since 1.2. A sequence of the expanders below, written into the note by HH_PLUGIN_DEFINE (and
 *   HOOKHOST_PLUGIN); the host reads it without running the plugin:
 *     #define HH_PLUGIN_NEEDS HH_NEEDS_WRITE_PARAM(path) HH_NEEDS_NETWORK
 *   A plugin that writes its note with HH_PLUGIN_NOTE puts the same expanders in its TEXT.
 * HH_PLUGIN_MODE: HH_MODE_OBSERVE declares the plugin's hooks observers (since 1.3): they never
 *   feed and only watch, so the host runs them behind the step, on a worker thread of their own,
 *   unless a hook's section says mode = step (docs/observers.md). Default: on the step.
 * HH_PLUGIN_CADENCE: HH_CADENCE_EVERY_N_STEPS(NAME) declares which steps the plugin's hooks need
 *   (since 1.4): their first step in the process, and each step after which the global step is a
 *   multiple of their INT parameter NAME (the context's global_step + 1); the host skips their
 *   before_run and after_run on the other steps. Default: every step. */
#ifndef HH_PLUGIN_STATE_VERSION
#define HH_PLUGIN_STATE_VERSION 1
#endif
#ifndef HH_PLUGIN_MIN_ABI_MINOR
#define HH_PLUGIN_MIN_ABI_MINOR HH_ABI_MINOR
#endif
#ifndef HH_PLUGIN_NEEDS
#define HH_PLUGIN_NEEDS ""
#endif
#ifndef HH_PLUGIN_MODE
#define HH_PLUGIN_MODE ""
#endif
#ifndef HH_PLUGIN_CADENCE
#define HH_PLUGIN_CADENCE ""
#endif

/* The needs.* note lines (since 1.2), one per expander. PATH is a string literal; NAME the bare
 * name of a STRING or STRING_LIST parameter of the plugin, whose value (each item of a list) is a
 * path taken as a PATH of the same kind. Every line but network and processes may repeat. */
#define HH_NEEDS_READ(PATH) "needs.read=" PATH "\n"   /* absolute, or from the config folder */
#define HH_NEEDS_WRITE(PATH) "needs.write=" PATH "\n" /* absolute, or from the run folder */
#define HH_NEEDS_READ_PARAM(NAME) "needs.read.param=" #NAME "\n"
#define HH_NEEDS_WRITE_PARAM(NAME) "needs.write.param=" #NAME "\n"
#define HH_NEEDS_NETWORK "needs.network=1\n"     /* sockets beyond the host's channel */
#define HH_NEEDS_PROCESSES "needs.processes=1\n" /* starting other programs (fork, exec) */

/* The mode= note line (since 1.3): HH_PLUGIN_MODE's one value. */
#define HH_MODE_OBSERVE "mode=observe\n"

/* The cadence line (since 1.4): HH_PLUGIN_CADENCE's one form. NAME is the bare name of an INT
 * parameter of the plugin. */
#define HH_CADENCE_EVERY_N_STEPS(NAME) "cadence.every_n_steps=" #NAME "\n"

/* ---- The metadata note --------------------------------------------------------------------
 * An ELF note, owner "hookhost", type HH_NOTE_TYPE_METADATA, in a section named .note.hookhost
 * (the linker merges it into the PT_NOTE segment, which survives strip). Descriptor layout:
 *   uint32_t format (HH_NOTE_FORMAT), uint32_t header_size (bytes before the text; 20 in 1.0),
 *   uint32_t abi_major, uint32_t abi_minor, uint32_t min_abi_minor,
 *   (a later minor may add header words: readers skip to header_size)
 *   char text[]: NUL-terminated UTF-8 lines
 *     id=<id>
 *     version=<version>
 *     description=<one line>
 *     param=<name>\t<TYPE>\t<FLAG>\t<default>\t<help>     (one line per parameter, in order)
 *     placement=chief|all                                 (optional, since 1.1; at most once)
 *     needs.read=<path>          needs.write=<path>       (optional, repeatable, since 1.2)
 *     needs.read.param=<name>    needs.write.param=<name> (optional, repeatable, since 1.2)
 *     needs.network=1            needs.processes=1        (optional, at most once, since 1.2)
 *     mode=observe                                        (optional, at most once, since 1.3)
 *     cadence.every_n_steps=<name>                        (optional, at most once, since 1.4)
 *   where TYPE is BOOL, INT, FLOAT, STRING or STRING_LIST and FLAG is OPTIONAL, REQUIRED or
 *   DEFAULT. placement says where the plugin's hooks run in a distributed job when their section
 *   sets no `ranks`: chief (rank 0 alone) or all (every rank, also when the line is absent); a
 *   1.0 host ignores it. The needs.* lines say what a confined hook may touch beyond the system's
 *   runtime and its run folder (HH_PLUGIN_NEEDS): read paths are absolute or relative to the
 *   hook's config folder, write paths absolute or relative to its run folder, and a .param line
 *   names a STRING or STRING_LIST parameter whose values are such paths; a path is not empty, has
 *   no ".." component and is shorter than 4096 bytes. A 1.0 or 1.1 host ignores them. mode=observe
 *   makes the plugin's hooks observers unless their section says otherwise (HH_PLUGIN_MODE); a
 *   host before 1.3 ignores it and runs them on the step. cadence.every_n_steps names an INT
 *   parameter: the hooks need their per-step calls only at their first step and at the steps
 *   after which the global step is a multiple of its value (HH_PLUGIN_CADENCE); a host before
 *   1.4 ignores it and calls them every step. Readers
 *   ignore lines with other keys (other needs.* keys too) and tab fields after the fifth: a later
 *   minor may add both. A host checks the version words before it reads the text.
 * descsz counts the header words and the text with its NUL and the NULs padding it to a multiple
 * of 4 bytes (HH_NOTE_PAD4_), so the descriptor needs no further padding. */
#define HH_NOTE_OWNER "hookhost"
#define HH_NOTE_TYPE_METADATA 0x48480001u
#define HH_NOTE_FORMAT 2u
#define HH_NOTE_HEADER_SIZE_1_0 20u

#define HH_NOTE_PAD4_(n) (((n) + 3u) & ~(size_t)3u)

#define HH_NOTE_DEFINE_(TEXT)                                                             \
  __attribute__((section(".note.hookhost"), used, aligned(4))) static const struct {      \
    uint32_t namesz, descsz, type;                                                        \
    char name[12];                                                                        \
    uint32_t format, header_size, abi_major, abi_minor, min_abi_minor;                    \
    char text[HH_NOTE_PAD4_(sizeof(TEXT))];                                               \
  } hh_plugin_note_ = {9u,                                                                \
                       (uint32_t)(HH_NOTE_HEADER_SIZE_1_0 + HH_NOTE_PAD4_(sizeof(TEXT))), \
                       HH_NOTE_TYPE_METADATA,                                             \
                       HH_NOTE_OWNER,                                                     \
                       HH_NOTE_FORMAT,                                                    \
                       HH_NOTE_HEADER_SIZE_1_0,                                           \
                       HH_ABI_MAJOR,                                                      \
                       HH_ABI_MINOR,                                                      \
                       HH_PLUGIN_MIN_ABI_MINOR,                                           \
                       TEXT};

/* Writes the metadata note by hand, for a plugin that defines its hookhost_plugin_v1 entry without
 * HH_PLUGIN_DEFINE (glue generated for another language, a table built by hand). TEXT is a string
 * literal holding the note's lines as above, each ending in "\n"; the id, version and parameters
 * must match the entry's, which the host checks when it loads the plugin (placement=, mode= and
 * the needs.* lines are the note's alone: end TEXT with HH_PLUGIN_NEEDS, or with the HH_NEEDS_*
 * expanders, to declare needs, and with HH_MODE_OBSERVE to declare observers). Use once per
 * library, at file scope. */
#define HH_PLUGIN_NOTE(TEXT) HH_NOTE_DEFINE_(TEXT)

/* Expanders for a parameter list written as an X-macro:
 *   #define MY_PARAMS(P) \
 *     P(threshold, FLOAT, DEFAULT, "0.01", "stop when the loss falls below this") \
 *     P(tensors, STRING_LIST, REQUIRED, "", "tensors to log")
 */
#define HH_PARAM_DESC_(name, type, flag, def, help) \
  {HH_PARAM_DESC_SIZE, HH_PARAM_TYPE_##type, HH_PARAM_FLAG_##flag, #name, def, help},
#define HH_PARAM_NOTE_(name, type, flag, def, help) \
  "param=" #name "\t" #type "\t" #flag "\t" def "\t" help "\n"
#define HH_NO_PARAMS(P)

/* The placement line a PLACEMENT word writes: a word other than chief or all does not compile
 * (HH_PLACEMENT_NOTE_<word> is undeclared). Since 1.1. */
#define HH_PLACEMENT_NOTE_chief "placement=chief\n"
#define HH_PLACEMENT_NOTE_all "placement=all\n"

/* Defines the entry symbol, the parameter table and the note from one description.
 *   HH_PLUGIN_DEFINE(ID, VERSION, DESCRIPTION, PARAMS, CREATE)
 *   HH_PLUGIN_DEFINE(ID, VERSION, DESCRIPTION, PARAMS, CREATE, PLACEMENT)   (since 1.1)
 *   ID, VERSION, DESCRIPTION: string literals; PARAMS: an X-macro as above (or HH_NO_PARAMS);
 *   CREATE: the create function; PLACEMENT: the bare word chief (the plugin's hooks run on rank 0
 *   alone in a distributed job, like TensorFlow's chief_only_hooks: for hooks that write the
 *   job's outputs) or all (every rank, the default without it). A section's `ranks` overrides
 *   it. */
#define HH_PLUGIN_DEFINE(...)                                                             \
  HH_PLUGIN_DEFINE_PICK_(                                                                 \
      __VA_ARGS__, HH_PLUGIN_DEFINE_6_, HH_PLUGIN_DEFINE_5_,                              \
      HH_PLUGIN_DEFINE_NEEDS_5_OR_6_ARGUMENTS, HH_PLUGIN_DEFINE_NEEDS_5_OR_6_ARGUMENTS,   \
      HH_PLUGIN_DEFINE_NEEDS_5_OR_6_ARGUMENTS, HH_PLUGIN_DEFINE_NEEDS_5_OR_6_ARGUMENTS, ) \
  (__VA_ARGS__)
#define HH_PLUGIN_DEFINE_PICK_(a1, a2, a3, a4, a5, a6, NAME, ...) NAME
#define HH_PLUGIN_DEFINE_5_(ID, VERSION, DESCRIPTION, PARAMS, CREATE) \
  HH_PLUGIN_DEFINE_WITH_NOTE_(ID, VERSION, DESCRIPTION, PARAMS, CREATE, "")
#define HH_PLUGIN_DEFINE_6_(ID, VERSION, DESCRIPTION, PARAMS, CREATE, PLACEMENT) \
  HH_PLUGIN_DEFINE_WITH_NOTE_(ID, VERSION, DESCRIPTION, PARAMS, CREATE,          \
                              HH_PLACEMENT_NOTE_##PLACEMENT)
#define HH_PLUGIN_DEFINE_WITH_NOTE_(ID, VERSION, DESCRIPTION, PARAMS, CREATE, EXTRA_NOTE) \
  static const hh_param_desc hh_plugin_params_[] = {                                      \
      PARAMS(HH_PARAM_DESC_){HH_PARAM_DESC_SIZE, 0, 0, NULL, NULL, NULL}};                \
  HH_NOTE_DEFINE_("id=" ID "\nversion=" VERSION "\ndescription=" DESCRIPTION              \
                  "\n" PARAMS(HH_PARAM_NOTE_) EXTRA_NOTE HH_PLUGIN_NEEDS HH_PLUGIN_MODE   \
                      HH_PLUGIN_CADENCE)                                                  \
  HH_ENTRY_DECL_ HH_EXPORT const hh_plugin_entry hookhost_plugin_v1;                      \
  const hh_plugin_entry hookhost_plugin_v1 = {                                            \
      HH_PLUGIN_ENTRY_SIZE,                                                               \
      HH_ABI_MAJOR,                                                                       \
      HH_ABI_MINOR,                                                                       \
      HH_PLUGIN_MIN_ABI_MINOR,                                                            \
      ID,                                                                                 \
      VERSION,                                                                            \
      DESCRIPTION,                                                                        \
      hh_plugin_params_,                                                                  \
      (uint32_t)(sizeof(hh_plugin_params_) / sizeof(hh_plugin_params_[0]) - 1u),          \
      (uint32_t)sizeof(hh_param_desc),                                                    \
      HH_PLUGIN_STATE_VERSION,                                                            \
      CREATE};

HH_EXTERN_C_END

#endif /* HOOKHOST_ENTRY_H */
