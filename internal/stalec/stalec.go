//go:build mglacuda

// Package stalec leaves a chosen word in C heap memory that malloc is about
// to hand out again, for tests of code that stores into memory from
// C.malloc (the way gorgonia.org/cu's kernel launch does). It owns nothing
// else and is imported only by tests.
package stalec

/*
#include <stdint.h>
#include <stdlib.h>

static void mgla_leave_words(uintptr_t word, size_t size, int count) {
	void *p[16];
	if (count > 16) {
		count = 16;
	}
	for (int i = 0; i < count; i++) {
		p[i] = malloc(size);
		// volatile: stores into memory that is freed next are otherwise dropped.
		for (size_t k = 0; p[i] != NULL && k < size / sizeof(uintptr_t); k++) {
			((volatile uintptr_t *)p[i])[k] = word;
		}
	}
	for (int i = 0; i < count; i++) {
		free(p[i]);
	}
}
*/
import "C"

// LeaveWords mallocs count (at most 16) blocks of size bytes on the calling
// thread, fills each with word and frees them, so that this thread's next
// mallocs of that size are likely to return memory that still holds word
// (past malloc's own bookkeeping at the start of each block).
func LeaveWords(word uintptr, size, count int) {
	C.mgla_leave_words(C.uintptr_t(word), C.size_t(size), C.int(count))
}
