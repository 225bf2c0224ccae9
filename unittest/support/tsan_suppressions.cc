// Linked into every test binary.
//
// The Debian libleveldb is not built with ThreadSanitizer: its memtable
// publishes nodes to lock-free readers with atomics TSan cannot see, so the
// memcmp/new calls it makes on them look like races. Ignore reports from
// inside leveldb (our own code stays fully checked).
#if defined(__SANITIZE_THREAD__)
extern "C" const char* __tsan_default_suppressions() {
  return "called_from_lib:libleveldb.so\nrace:libleveldb.so\n";
}
#endif
