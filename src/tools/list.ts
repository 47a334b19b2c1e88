import { ToolError, type Tool } from './types.js';

// Placeholder: being written.
export const listTool: Tool = {
  name: 'list',
  description: 'not implemented yet',
  parameters: { type: 'object', properties: {} },
  readOnly: true,
  async run() {
    throw new ToolError('list is not implemented yet');
  },
};
