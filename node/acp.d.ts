// SPDX-License-Identifier: Apache-2.0
// Types of pmon/acp (acp.mjs).
import type { ClientApp } from '@agentclientprotocol/sdk';
export * as acp from '@agentclientprotocol/sdk';

/** Serves an ACP client's terminal methods with pmon; terminals left over when its connection closes are released (one app per agent connection). */
export function servePmonTerminals(app: ClientApp): ClientApp;

/** The client capabilities to announce: { terminal: true }. */
export const clientCapabilities: { terminal: true };
