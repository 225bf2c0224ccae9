// Small POSIX file-system helpers of the checkpoint code: recursive create
// and remove, directory listing, whole-file reads and writes, fsync of files
// and directories. Every call returns a Status naming the path and the
// errno; none keeps state, so all are thread-safe.
#ifndef CHORUS_NODE_FS_UTIL_H_
#define CHORUS_NODE_FS_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus {

// mkdir -p (mode 0755), durable: the parent of each directory it creates is
// fsynced. IOError naming the component that failed or is no directory.
Status CreateDirs(const std::string& dir);

// rm -rf: removes `path` (a file or a directory tree). OK when it is
// missing. Symbolic links are removed, never followed.
Status RemoveTree(const std::string& path);

// The names in directory `dir` ("." and ".." left out), unsorted.
Status ListDir(const std::string& dir, std::vector<std::string>* names);

// Every regular file under `dir`, recursively, as paths relative to `dir`
// ("a/b"), sorted. InvalidArgument for an entry that is neither a regular
// file nor a directory (a symlink, a fifo...): a checkpoint is plain files.
// Also lists every directory below `dir` (relative, `dir` itself as "") in
// *dirs when dirs is not null, parents before children.
Status ListFilesRecursive(const std::string& dir, std::vector<std::string>* files,
                          std::vector<std::string>* dirs);

// fsync of the file or directory at `path`.
Status SyncPath(const std::string& path);

// Reads all of `path`, checking what it read against the size it had.
Status ReadWholeFile(const std::string& path, std::string* data);

// Creates or replaces `path` with `data` and fsyncs it (not its directory).
Status WriteWholeFile(const std::string& path, const std::string& data);

// Reads the whole file at `path` once: its size and crc32c; with `sync`,
// fsyncs it too (the file was just written by someone else).
Status ChecksumFile(const std::string& path, bool sync, uint64_t* size, uint32_t* crc);

// Whether `path` exists (any type).
bool PathExists(const std::string& path);

// Hard-links `from` to `to`, or copies it (then fsyncs the copy) where the
// file system refuses a link (another device, no link support).
Status LinkOrCopyFile(const std::string& from, const std::string& to);

}  // namespace chorus

#endif  // CHORUS_NODE_FS_UTIL_H_
