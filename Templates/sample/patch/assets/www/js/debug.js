console.log('added by the patch directory');
