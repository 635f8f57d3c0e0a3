/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Intrusive doubly-linked lists: the item type has `prev` and `next` pointers, the owner keeps a
 * head pointer. LIST_REMOVE is a no-op for an item that is not linked (prev, next NULL and not the
 * head), so a destructor may call it whether or not the item ever made it into the list.
 */

#define LIST_PREPEND(head, item)                                                                                       \
	do {                                                                                                           \
		(item)->prev = NULL;                                                                                   \
		(item)->next = (head);                                                                                 \
		if (head)                                                                                              \
			(head)->prev = (item);                                                                         \
		(head) = (item);                                                                                       \
	} while (0)

#define LIST_REMOVE(head, item)                                                                                        \
	do {                                                                                                           \
		if ((item)->prev)                                                                                      \
			(item)->prev->next = (item)->next;                                                             \
		else if ((head) == (item))                                                                             \
			(head) = (item)->next;                                                                         \
		if ((item)->next)                                                                                      \
			(item)->next->prev = (item)->prev;                                                             \
		(item)->next = (item)->prev = NULL;                                                                    \
	} while (0)
