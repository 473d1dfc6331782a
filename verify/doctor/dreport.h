/* dreport.h - p2p-doctor's report: text for people, JSON (schema 1) for
 * machines (pure C). */
#ifndef P2PD_DREPORT_H
#define P2PD_DREPORT_H

#include <stdio.h>

#include "dmodel.h"
#include "drules.h"

#define DR_SCHEMA 1

void dr_report_text(FILE *f, const dr_model *m, const dr_diag *d, const char *source, int preinstall);
void dr_report_json(FILE *f, const dr_model *m, const dr_diag *d, const char *source, int preinstall);
/* One tab-separated line per finding, pair and the verdict, for scripts:
 *   gpu <label> <PCI address> <name> <BAR1 and VRAM>
 *   finding <id> <severity> <certainty> <subject: GPU0, GPU0-GPU1, machine> <summary>
 *   pair <from> <to> <verdict> <basis> <why>
 *   works <pairs> <driver version or ->   (every pair OK in topo -p2p r and w with the
 *                                          loaded driver, nothing stops P2P)
 *   verdict <status> <exit code> */
void dr_report_brief(FILE *f, const dr_model *m, const dr_diag *d);

#endif
