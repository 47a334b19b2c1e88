import { ToolError, type Tool } from './types.js';

// Placeholder: being written.
export const readTool: Tool = {
  name: 'read',
  description: 'not implemented yet',
  parameters: { type: 'object', properties: {} },
  readOnly: true,
  async run() {
    throw new ToolError('read is not implemented yet');
  },
};
