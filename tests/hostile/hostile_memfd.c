/* Shrinks the values arena under the host. The runner's process is the plugin's: begin() points
 * the runner's GOT entry for mmap at this plugin, so each descriptor the host sends to be mapped
 * passes through here first. For each one the plugin reopens every memfd it holds through
 * /proc/self/fd/N read-write and ftruncate(0)s it, and tries ftruncate(0) on the received
 * descriptor itself. before_run fetches "loss" so the host fills the arena every step; after_run
 * logs what each attempt gave ("hostile: ..."). */
#include "hostile.h"

#include <dirent.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>

typedef void* (*mmap_fn)(void*, size_t, int, int, int, off_t);
static mmap_fn g_real_mmap;
static char g_results[16][300]; /* logged at the next after_run (a call of the hook's thread) */
static int g_result_count;

/* Each snprintf's length is checked: a cut line is as good as a whole one here. */
static int cut(int n, size_t size) {
  return n < 0 || (size_t)n >= size;
}

static void note(const char* what, long rc) {
  char* out;
  if (g_result_count >= 16) return;
  out = g_results[g_result_count++];
  if (rc == -1)
    (void)cut(snprintf(out, sizeof g_results[0], "%s: failed: %s", what, strerrorname_np(errno)),
              sizeof g_results[0]);
  else
    (void)cut(snprintf(out, sizeof g_results[0], "%s: ok", what), sizeof g_results[0]);
}

/* Every memfd this process holds, reopened read-write and cut to 0 bytes. */
static void truncate_every_memfd(void) {
  DIR* dir = opendir("/proc/self/fd");
  struct dirent* entry;
  if (!dir) return;
  while ((entry = readdir(dir))) {
    char path[300], target[128], what[200];
    ssize_t n;
    int rw;
    if (entry->d_name[0] == '.') continue;
    if (cut(snprintf(path, sizeof path, "/proc/self/fd/%s", entry->d_name), sizeof path)) continue;
    n = readlink(path, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (strncmp(target, "/memfd:", 7) != 0) continue;
    rw = open(path, O_RDWR | O_CLOEXEC);
    (void)cut(snprintf(what, sizeof what, "reopen %s read-write", target + 1), sizeof what);
    note(what, rw < 0 ? -1 : 0);
    if (rw < 0) continue;
    (void)cut(snprintf(what, sizeof what, "ftruncate(%s reopened read-write, 0)", target + 1),
              sizeof what);
    note(what, syscall(SYS_ftruncate, rw, 0));
    close(rw);
  }
  closedir(dir);
}

static void* hostile_mmap(void* addr, size_t size, int prot, int flags, int fd, off_t offset) {
  if (fd >= 0 && (flags & MAP_SHARED)) {
    char path[64], target[256];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    const ssize_t n = readlink(path, target, sizeof target - 1);
    if (n > 0 && (target[n] = '\0', strstr(target, "hookhost-values"))) {
      truncate_every_memfd();
      note("ftruncate(the received descriptor, 0)", syscall(SYS_ftruncate, fd, 0));
    }
  }
  return g_real_mmap(addr, size, prot, flags, fd, offset);
}

/* Points the relocation slots for mmap in `rela[0, bytes)` at hostile_mmap. */
static int patch(const struct dl_phdr_info* info, const ElfW(Rela) * rela, size_t bytes,
                 const ElfW(Sym) * symbols, const char* names) {
  const long page = sysconf(_SC_PAGESIZE);
  int patched = 0;
  for (size_t i = 0; i < bytes / sizeof *rela; ++i) {
    const char* name = names + symbols[ELF64_R_SYM(rela[i].r_info)].st_name;
    void** slot;
    if (strcmp(name, "mmap") != 0 && strcmp(name, "mmap64") != 0) continue;
    slot = (void**)(info->dlpi_addr + rela[i].r_offset);
    mprotect((void*)((uintptr_t)slot & ~(uintptr_t)(page - 1)), (size_t)page,
             PROT_READ | PROT_WRITE);
    if (!g_real_mmap) g_real_mmap = (mmap_fn)*slot;
    *slot = (void*)hostile_mmap;
    ++patched;
  }
  return patched;
}

static int patch_program(struct dl_phdr_info* info, size_t size, void* data) {
  const ElfW(Dyn)* dyn = NULL;
  const ElfW(Sym)* symbols = NULL;
  const char* names = NULL;
  const ElfW(Rela)* jmprel = NULL;
  const ElfW(Rela)* rela = NULL;
  size_t jmprel_bytes = 0, rela_bytes = 0;
  (void)size;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = (const ElfW(Dyn)*)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (!dyn) return 1; /* the program comes first: only it is patched */
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    /* The loader relocated these in place, except where it keeps the section read-only. */
    uintptr_t at = dyn->d_un.d_ptr;
    if (at < info->dlpi_addr) at += info->dlpi_addr;
    switch (dyn->d_tag) {
      case DT_SYMTAB: symbols = (const ElfW(Sym)*)at; break;
      case DT_STRTAB: names = (const char*)at; break;
      case DT_JMPREL: jmprel = (const ElfW(Rela)*)at; break;
      case DT_RELA: rela = (const ElfW(Rela)*)at; break;
      case DT_PLTRELSZ: jmprel_bytes = dyn->d_un.d_val; break;
      case DT_RELASZ: rela_bytes = dyn->d_un.d_val; break;
    }
  }
  if (symbols && names) {
    int patched = 0;
    if (jmprel) patched += patch(info, jmprel, jmprel_bytes, symbols, names);
    if (rela) patched += patch(info, rela, rela_bytes, symbols, names);
    *(int*)data = patched;
  }
  return 1;
}

static void hostile_attempt(hostile* h) {
  int patched = 0;
  char text[64];
  dl_iterate_phdr(patch_program, &patched);
  snprintf(text, sizeof text, "mmap slots patched: %d", patched);
  hostile_say(h, text);
}

static hh_status memfd_before_run(hh_hook* hook, const hh_run_context* context,
                                  hh_run_request* request, hh_error* err) {
  (void)hook;
  (void)context;
  (void)err;
  return request->add_fetch(request, "loss");
}

static hh_status memfd_after_run(hh_hook* hook, const hh_run_context* context,
                                 const hh_run_values* values, hh_error* err) {
  const hostile* h = (const hostile*)hook->hook_data;
  (void)context;
  (void)values;
  (void)err;
  for (int i = 0; i < g_result_count; ++i) hostile_say(h, g_results[i]);
  g_result_count = 0;
  return HH_OK;
}

static hh_status hostile_memfd_create(const hh_host* host, const hh_create_args* args,
                                      hh_hook** out, hh_error* err) {
  const hh_status status = hostile_create(host, args, out, err);
  if (status != HH_OK) return status;
  (*out)->before_run = memfd_before_run;
  (*out)->after_run = memfd_after_run;
  return HH_OK;
}

HH_PLUGIN_DEFINE("hostile_memfd", "1.0.0",
                 "Test fixture: truncates the shared values arena it is handed", HH_NO_PARAMS,
                 hostile_memfd_create)
