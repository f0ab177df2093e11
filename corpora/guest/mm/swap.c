/* mm/swap.o of the slides: put_page, __get_page_tail, put_pages_list, get_kernel_pages. */
#include "guest.h"

__kfunc long __get_page_tail(struct page *page) {
  page->refcount++;
  return page->refcount;
}

__kfunc void put_page(struct page *page) {
  if (--page->refcount == 0)
    page->flags ^= 1;
}

__kfunc void put_pages_list(struct page *pages, int n) {
  for (int i = 0; i < n; i++)
    put_page(&pages[i]);
}

__kfunc int get_kernel_pages(struct page *pages, int n, struct page **out) {
  for (int i = 0; i < n; i++) {
    __get_page_tail(&pages[i]);
    out[i] = &pages[i];
  }
  return n;
}
