// Linked into every test binary.
//
// The Debian libleveldb is not built with ThreadSanitizer: its memtable
// publishes nodes to lock-free readers with atomics TSan cannot see, so the
// memcmp/new calls it makes on them look like races. Ignore reports from
// inside leveldb (our own code stays fully checked). Two more of the same
// kind show up once logs are trimmed (a trim's scan reads blocks leveldb's
// compactions decompress): libsnappy, which leveldb calls to decompress, is
// not instrumented either, and its memcpy calls carry no leveldb frame; and
// deleting the DB object races, for TSan, with leveldb's background thread
// whose hand-offs it cannot see (the previous access has no stack).
// Last, every chorus log runs over WalSyncEnv, a leveldb::EnvWrapper built
// into our code: its Schedule forwards to leveldb's PosixEnv::Schedule, which
// locks its background mutex inside libleveldb (ignored: called_from_lib)
// and ends in a tail call to pthread_mutex_unlock, whose return address is
// then the inlined EnvWrapper::Schedule in our binary: TSan sees an unlock
// of a mutex it never saw locked. Only that mutex report is suppressed.
// And deleting that Env after its DB races, for TSan, with leveldb's
// background thread that used it (the DB's destructor waits for that
// thread's work under leveldb's own mutex: a hand-off TSan cannot see, the
// same as for the DB object above).
#if defined(__SANITIZE_THREAD__)
extern "C" const char* __tsan_default_suppressions() {
  return "called_from_lib:libleveldb.so\nrace:libleveldb.so\ncalled_from_lib:libsnappy.so\n"
         "race:std::default_delete<leveldb::DB>\nmutex:leveldb::EnvWrapper::Schedule\n"
         "race:chorus::WalSyncEnv::~WalSyncEnv\n";
}
#endif
