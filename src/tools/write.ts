import { ToolError, type Tool } from './types.js';

// Placeholder: being written.
export const writeTool: Tool = {
  name: 'write',
  description: 'not implemented yet',
  parameters: { type: 'object', properties: {} },
  readOnly: true,
  async run() {
    throw new ToolError('write is not implemented yet');
  },
};
