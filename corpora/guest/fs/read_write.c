/* fs/read_write.o of the slides: new_sync_read, vfs_setpos, fixed_size_llseek, default_llseek. */
#include "guest.h"

#define SEEK_SET 0
#define SEEK_CUR 1
#define SEEK_END 2
#define EINVAL 22

__kfunc long long vfs_setpos(struct file *f, long long offset, long long maxsize) {
  if (offset < 0 || offset > maxsize)
    return -EINVAL;
  if (offset != f->f_pos) {
    f->f_pos = offset;
    f->f_version = 0;
  }
  return offset;
}

__kfunc long long fixed_size_llseek(struct file *f, long long offset, int whence, long long size) {
  switch (whence) {
  case SEEK_SET:
    return vfs_setpos(f, offset, size);
  case SEEK_CUR:
    return vfs_setpos(f, f->f_pos + offset, size);
  case SEEK_END:
    return vfs_setpos(f, size + offset, size);
  default:
    return -EINVAL;
  }
}

__kfunc long long default_llseek(struct file *f, long long offset, int whence) {
  return fixed_size_llseek(f, offset, whence, f->f_size);
}

__kfunc long long new_sync_read(struct file *f, char *buf, ulong len) {
  ulong done = 0;
  while (done < len && f->f_pos < f->f_size) {
    struct page *p = &f->pages[(f->f_pos >> 4) & 3];
    __get_page_tail(p);
    buf[done] = (char)(p->flags + (ulong)f->f_pos);
    put_page(p);
    done++;
    f->f_pos++;
  }
  return (long long)done;
}
