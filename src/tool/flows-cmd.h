/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * weft flows [--follow] [--pod NS/NAME] [--verdict allowed|denied] [--json] [--weftd URL]: the
 * connections a weftd logged (weftd --flow-log; GET /flows, docs/flows.md), one line each: time,
 * event (NEW, END, DROP), protocol, source and destination with their pods, the Service and
 * endpoint of a DNATed connection, the verdict and why; END adds bytes and packets each way.
 * --pod keeps the records with that pod at either end (or as the endpoint), --verdict those of
 * one verdict; --follow polls every 0.5 s for the records after the last one seen (no record
 * twice) and says when the ring moved on past some. The last line (a summary) counts the records
 * weftd lost (kernel, ring, rate). --json prints weftd's lines as they are. Exit 2 when that weftd
 * has no flow log (or on a usage error), 3 when it is unreachable.
 */

int flows_cmd_main(int argc, char **argv);
