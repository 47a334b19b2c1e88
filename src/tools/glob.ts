import { ToolError, type Tool } from './types.js';

// Placeholder: being written.
export const globTool: Tool = {
  name: 'glob',
  description: 'not implemented yet',
  parameters: { type: 'object', properties: {} },
  readOnly: true,
  async run() {
    throw new ToolError('glob is not implemented yet');
  },
};
